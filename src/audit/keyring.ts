// The audit chain keys: SVC_AUDIT_CHAIN_SECRET signs new rows and the chain
// state; SVC_AUDIT_CHAIN_PREVIOUS_SECRETS still verify rows signed before a
// rotation. Rows and state name their key by a key id, so verification
// needs no trial and error. Never keyed by SVC_SECRET.
import { hmacHex } from '../lib/crypto.ts';

export interface ChainKey {
  id: string;
  secret: string;
}

export const keyIdOf = (secret: string): string => hmacHex(secret, 'svc/audit-chain/key-id/v1\0');

export class Keyring {
  readonly current: ChainKey;
  private readonly byIdMap: Map<string, ChainKey>;

  constructor(current: string, previous: readonly string[] = []) {
    if (current === '') throw new Error('SVC_AUDIT_CHAIN_SECRET is not set');
    this.current = { id: keyIdOf(current), secret: current };
    this.byIdMap = new Map([this.current, ...previous.map((s) => ({ id: keyIdOf(s), secret: s }))].map((k) => [k.id, k]));
  }

  get(id: string): ChainKey | undefined {
    return this.byIdMap.get(id);
  }

  /** The secrets it was built from, current first: how a verification worker
   * thread (same process) builds its own keyring. */
  secrets(): { current: string; previous: string[] } {
    return { current: this.current.secret, previous: [...this.byIdMap.values()].filter((k) => k !== this.current).map((k) => k.secret) };
  }

  ids(): string[] {
    return [...this.byIdMap.keys()];
  }
}
