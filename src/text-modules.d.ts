// Bun imports these as text (migrations) or as embedded file paths (dashboard assets).
declare module '*.sql' {
  const text: string;
  export default text;
}
