// metav1.Time on the wire (k8s.io/apimachinery pkg/apis/meta/v1/time.go, time_proto.go).
//
// JSON: RFC 3339 in UTC with whole seconds ("2008-01-01T01:01:01Z"); the zero time is null.
// Protobuf: a Timestamp {seconds=1, nanos=2}, both always written; the zero time (Go's
// 0001-01-01T00:00:00Z, Unix -62135596800) is written as an empty message.

/** Seconds and nanoseconds since the Unix epoch. */
export interface Timestamp {
  seconds: number;
  nanos: number;
}

/** Unix seconds of Go's zero time.Time (0001-01-01T00:00:00Z). */
export const zeroTimeUnixSeconds = -62135596800;

const rfc3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;

/**
 * Parses a metav1.Time JSON value. null, undefined, "" and the zero time give undefined
 * ("zero"); anything else that is not RFC 3339 throws, as Go's decoder would refuse it.
 */
export function parseTime(value: unknown): Timestamp | undefined {
  if (value === null || value === undefined || value === '') return undefined;
  if (typeof value !== 'string') throw new TypeError(`metav1.Time: expected an RFC 3339 string, got ${typeof value}`);
  const m = rfc3339.exec(value);
  if (m === null) throw new TypeError(`metav1.Time: not RFC 3339: ${JSON.stringify(value)}`);
  const d = new Date(0);
  d.setUTCFullYear(Number(m[1]), Number(m[2]) - 1, Number(m[3]));
  d.setUTCHours(Number(m[4]), Number(m[5]), Number(m[6]), 0);
  let seconds = d.getTime() / 1000;
  if (m[9] !== undefined) {
    const offset = (Number(m[10]) * 60 + Number(m[11])) * 60;
    seconds -= m[9] === '+' ? offset : -offset;
  }
  const nanos = m[7] === undefined ? 0 : Number(m[7].padEnd(9, '0'));
  if (seconds === zeroTimeUnixSeconds && nanos === 0) return undefined;
  return { seconds, nanos };
}

/** Formats whole seconds the way metav1.Time.MarshalJSON does (UTC, RFC 3339, no fraction). */
export function formatTime(seconds: number): string {
  const iso = new Date(seconds * 1000).toISOString(); // 2008-01-01T01:01:01.000Z
  return `${iso.slice(0, iso.length - 5)}Z`;
}

/**
 * True when decoded seconds are Go's zero time. (An empty Time message is also the zero time; a
 * message with seconds 0 is the Unix epoch, not zero. Go's decoder drops nanos.)
 */
export function isZeroTimeSeconds(seconds: number): boolean {
  return seconds === zeroTimeUnixSeconds;
}
