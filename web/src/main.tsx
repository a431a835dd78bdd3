// The dashboard's entry: theme first (no flash of the wrong colours), then the session, then the app.
import { render } from 'preact';
import { forgetEarly } from './api/early.ts';
import { App } from './app.tsx';
import { applyTheme } from './lib/theme.ts';
import { loadSession } from './session.ts';
import './styles.css';

applyTheme();
render(<App />, document.getElementById('app')!);
// The first page renders as soon as the session is known (a microtask later) and takes its early answers
// then; those it did not take are dropped right after, before anything else can ask.
void loadSession().then(() => setTimeout(forgetEarly));
