// index.html's inline script (build.ts inlines it; the CSP allows it by its hash): the requests every page needs
// and the first ones of the page the tab opens on leave while the HTML is parsed (api/early.ts).
import { startEarly } from './api/early.ts';
import { openingRequests } from './pages/project/requests.ts';

startEarly([['/auth/me'], ['/projects'], ...openingRequests(location.pathname, location.search)]);
