// Go's encoding/pem Decode, for --client-ca-file as kube-apiserver reads it (client-go
// cert.ParseCertsPEM: each "CERTIFICATE" block without headers). OpenSSL's PEM reader differs: it
// strips any trailing byte ≤ ' ' from a line (a form feed, NUL, or with signed chars bytes ≥ 0x80)
// and a UTF-8 byte-order mark, so it loaded CAs Go skips (helper 26); mvproxy reads the file as Go.
// A port of Go 1.26's pem.go (Decode, getLine, removeSpacesAndTabs), on latin1 strings.

export interface PEMBlock {
  readonly type: string;
  readonly headers: number;
  readonly bytes: Buffer;
}

const PEM_START = '\n-----BEGIN ';
const PEM_END = '\n-----END ';
const PEM_END_OF_LINE = '-----';

/** The first \n- or \r\n-ended line without trailing spaces and tabs, the rest, and how much was consumed. */
function getLine(data: string): [line: string, rest: string, consumed: number] {
  let i = data.indexOf('\n');
  let j: number;
  if (i < 0) {
    i = data.length;
    j = i;
  } else {
    j = i + 1;
    if (i > 0 && data[i - 1] === '\r') i--;
  }
  return [trimRightSpacesAndTabs(data.slice(0, i)), data.slice(j), j];
}

/**
 * bytes.TrimRight(s, " \t"), in linear time: a regex /[ \t]+$/ retried from every space of a long run
 * followed by another byte (100,000 spaces and an "x": 8.6 s in setClientCA, helper 27).
 */
function trimRightSpacesAndTabs(s: string): string {
  let end = s.length;
  while (end > 0 && (s.charCodeAt(end - 1) === 0x20 || s.charCodeAt(end - 1) === 0x09)) end--;
  return s.slice(0, end);
}

/**
 * base64.StdEncoding.Decode: the padded standard alphabet, \r and \n skipped, anything else fails;
 * not strict about the unused bits of the last quantum (neither is node's decoder).
 */
function base64Decode(s: string): Buffer | null {
  const t = s.replace(/[\r\n]/g, '');
  if (t.length % 4 !== 0 || !/^[A-Za-z0-9+/]*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(t)) return null;
  return Buffer.from(t, 'base64');
}

/** Every block Go's pem.Decode finds in `data`, in order. */
export function goPEMBlocks(data: string): PEMBlock[] {
  const out: PEMBlock[] = [];
  let rest = data;
  for (;;) {
    const d = decode(rest);
    if (d === null) return out;
    out.push(d[0]);
    rest = d[1];
  }
}

function decode(data: string): [PEMBlock, string] | null {
  let rest = data;
  let endTrailerIndex = 0;
  for (;;) {
    if (endTrailerIndex < 0 || endTrailerIndex > rest.length) return null;
    rest = rest.slice(endTrailerIndex);
    let endIndex = rest.indexOf(PEM_END);
    if (endIndex < 0) return null;
    endTrailerIndex = endIndex + PEM_END.length;
    const beginIndex = rest.slice(0, endIndex).lastIndexOf(PEM_START.slice(1));
    if (beginIndex < 0 || (beginIndex > 0 && rest[beginIndex - 1] !== '\n')) continue;
    rest = rest.slice(beginIndex + PEM_START.length - 1);
    endIndex -= beginIndex + PEM_START.length - 1;
    endTrailerIndex -= beginIndex + PEM_START.length - 1;
    let typeLine: string;
    let consumed: number;
    [typeLine, rest, consumed] = getLine(rest);
    endIndex -= consumed;
    endTrailerIndex -= consumed;
    if (!typeLine.endsWith(PEM_END_OF_LINE)) continue;
    typeLine = typeLine.slice(0, typeLine.length - PEM_END_OF_LINE.length);
    let headers = 0;
    for (;;) {
      if (rest.length === 0) return null;
      const [line, next, used] = getLine(rest);
      if (!line.includes(':')) break;
      headers++;
      rest = next;
      endIndex -= used;
      endTrailerIndex -= used;
    }
    if (headers > 0 && endIndex < 0) continue;
    let endTrailer = rest.slice(endTrailerIndex);
    const endTrailerLen = typeLine.length + PEM_END_OF_LINE.length;
    if (endTrailer.length < endTrailerLen) continue;
    const restOfEndLine = endTrailer.slice(endTrailerLen);
    endTrailer = endTrailer.slice(0, endTrailerLen);
    if (!endTrailer.startsWith(typeLine) || !endTrailer.endsWith(PEM_END_OF_LINE)) continue;
    if (getLine(restOfEndLine)[0].length !== 0) continue;
    let bytes: Buffer = Buffer.alloc(0);
    if (endIndex > 0) {
      const decoded = base64Decode(rest.slice(0, endIndex).replace(/[ \t]/g, ''));
      if (decoded === null) continue;
      bytes = decoded;
    }
    return [{ type: typeLine, headers, bytes }, getLine(rest.slice(endIndex + PEM_END.length - 1))[1]];
  }
}
