// index.html's inline script (build.ts inlines it; the CSP allows it by its hash): the requests every page needs
// (the session, the projects, the bell's unread count) and the first ones of the page the tab opens on leave
// while the HTML is parsed (api/early.ts).
import { startEarly } from './api/early.ts';
import { UNREAD_COUNT_PATH } from './api/url.ts';
import { openingRequests } from './pages/project/requests.ts';

startEarly([['/auth/me'], ['/projects'], [UNREAD_COUNT_PATH], ...openingRequests(location.pathname, location.search)]);
