// Light, dark or the system's choice, remembered in this browser; styles.css reads [data-theme].
export type Theme = 'system' | 'light' | 'dark';
const KEY = 'svc.theme';

export function storedTheme(): Theme {
  const t = localStorage.getItem(KEY);
  return t === 'light' || t === 'dark' ? t : 'system';
}

export function applyTheme(theme: Theme = storedTheme()): void {
  if (theme === 'system') {
    localStorage.removeItem(KEY);
    delete document.documentElement.dataset.theme;
  } else {
    localStorage.setItem(KEY, theme);
    document.documentElement.dataset.theme = theme;
  }
}
