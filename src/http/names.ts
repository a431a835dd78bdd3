// Names of the browser credential the API documents (auth/cookies.ts sets and reads them).
export const SESSION_COOKIE_NAME = 'svc_session';
export const CSRF_HEADER_NAME = 'x-csrf-token';
