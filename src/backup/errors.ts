// A backup, restore, reset or recovery operation refused (or failed) with
// nothing changed; the message says why. The CLI prints it and exits 1.
export class Refused extends Error {}
