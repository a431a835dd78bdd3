// GET /setup: a self-contained page (no external assets) that creates the
// first administrator. The token stays in the URL's query string and is read
// by the page's script; the script and styles run under a per-request nonce.
import { randomToken } from '../lib/crypto.ts';

export function setupPage(): { html: string; csp: string } {
  const nonce = randomToken(16);
  const csp = `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'`;
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Set up svc</title>
<style nonce="${nonce}">
  :root { color-scheme: light dark; font-family: system-ui, -apple-system, 'Segoe UI', sans-serif; }
  body { margin: 0; display: grid; place-items: center; min-height: 100vh; background: Canvas; color: CanvasText; }
  main { width: min(26rem, calc(100vw - 2rem)); }
  h1 { font-size: 1.5rem; margin-bottom: .25rem; }
  p.lead { margin-top: 0; opacity: .8; }
  label { display: block; margin: 1rem 0 .25rem; font-weight: 600; }
  input { width: 100%; box-sizing: border-box; padding: .6rem; font: inherit; border: 1px solid GrayText; border-radius: .4rem; background: Field; color: FieldText; }
  input:focus-visible, button:focus-visible { outline: 3px solid Highlight; outline-offset: 2px; }
  .hint { font-size: .85rem; opacity: .75; margin: .25rem 0 0; }
  button { margin-top: 1.5rem; width: 100%; padding: .7rem; font: inherit; font-weight: 600; border: 0; border-radius: .4rem; background: #1f6feb; color: #fff; cursor: pointer; }
  button[disabled] { opacity: .6; cursor: progress; }
  [role=alert] { margin-top: 1rem; padding: .6rem .8rem; border-radius: .4rem; background: #cf222e22; border: 1px solid #cf222e; }
  [role=alert]:empty { display: none; }
</style>
</head>
<body>
<main>
  <h1>Set up svc</h1>
  <p class="lead">Create the first administrator. A project called “Default” is created with it.</p>
  <form id="setup" novalidate>
    <label for="email">E-mail address</label>
    <input id="email" name="email" type="email" autocomplete="username" required maxlength="320">
    <label for="display_name">Your name</label>
    <input id="display_name" name="display_name" autocomplete="name" maxlength="200">
    <label for="password">Password</label>
    <input id="password" name="password" type="password" autocomplete="new-password" required maxlength="256" aria-describedby="password-hint">
    <p class="hint" id="password-hint">At least 12 characters; under 16 characters it needs three of lowercase, uppercase, digit and symbol. Common passwords are refused.</p>
    <label for="confirm">Repeat the password</label>
    <input id="confirm" name="confirm" type="password" autocomplete="new-password" required maxlength="256">
    <div id="error" role="alert" aria-live="assertive"></div>
    <button id="submit" type="submit">Create administrator</button>
  </form>
</main>
<script nonce="${nonce}">
  const form = document.getElementById('setup');
  const error = document.getElementById('error');
  const button = document.getElementById('submit');
  const token = new URLSearchParams(location.search).get('token') || '';
  if (!token) error.textContent = 'This page needs the setup link printed by svc serve (it ends in ?token=...).';
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    error.textContent = '';
    const data = Object.fromEntries(new FormData(form));
    if (data.password !== data.confirm) { error.textContent = 'The two passwords differ.'; return; }
    button.disabled = true;
    try {
      const res = await fetch('/api/v1/setup/complete', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ token, email: data.email, display_name: data.display_name || undefined, password: data.password }),
      });
      if (res.ok) { location.replace('/'); return; }
      const body = await res.json().catch(() => ({}));
      const fields = (body.details && body.details.fields) || [];
      error.textContent = fields.length ? fields.map((f) => f.message).join('; ') : (body.message || 'Setup failed (HTTP ' + res.status + ').');
    } catch {
      error.textContent = 'svc did not answer. Is it still running?';
    }
    button.disabled = false;
  });
</script>
</body>
</html>
`;
  return { html, csp };
}

export const SETUP_CLOSED_HTML = `<!doctype html><html lang="en"><meta charset="utf-8"><title>Not found</title><p>Setup is complete. <a href="/">Sign in</a>.</p></html>`;
