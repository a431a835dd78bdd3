// Says whether a list follows the live stream ("Live") or polls while the stream is down.
import type { LiveState } from '../lib/live.ts';
import { Badge } from './bits.tsx';

export function LiveBadge(props: { state: LiveState }) {
  return (
    <span
      data-testid="live-state"
      title={props.state === 'live' ? 'Changes appear as they happen' : 'The live stream is not connected: the list is refreshed every few seconds'}
    >
      <Badge tone={props.state === 'live' ? 'ok' : 'muted'}>{props.state === 'live' ? 'Live' : 'Polling'}</Badge>
    </span>
  );
}
