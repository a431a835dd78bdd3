// A QR code drawn in the browser from the otpauth:// URL (uqr encodes; we draw one SVG path). Dark on white in
// both themes: scanners want the contrast the right way round.
import { encode } from 'uqr';

export function QrCode(props: { text: string; label: string; size?: number }) {
  const { data, size } = encode(props.text, { ecc: 'M', border: 2 });
  let d = '';
  data.forEach((row, y) =>
    row.forEach((dark, x) => {
      if (dark) d += `M${x} ${y}h1v1h-1z`;
    }),
  );
  return (
    <svg
      class="qr"
      role="img"
      aria-label={props.label}
      viewBox={`0 0 ${size} ${size}`}
      width={props.size ?? 200}
      height={props.size ?? 200}
      shape-rendering="crispEdges"
    >
      <rect width={size} height={size} fill="#fff" />
      <path d={d} fill="#000" />
    </svg>
  );
}
