// The dashboard's entry: theme first (no flash of the wrong colours), then the session, then the app.
import { render } from 'preact';
import { App } from './app.tsx';
import { applyTheme } from './lib/theme.ts';
import { loadSession } from './session.ts';
import './styles.css';

applyTheme();
render(<App />, document.getElementById('app')!);
void loadSession();
