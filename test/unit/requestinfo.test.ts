// newRequestInfo: the tables of kubernetes/kubernetes
// staging/src/k8s.io/apiserver/pkg/endpoints/request/requestinfo_test.go (TestGetAPIRequestInfo,
// TestGetNonAPIRequestInfo, TestSelectorParsing; commit 0f998765), rewritten by hand, then
// docs/kubernetes-mvp.md §2.1,
// the URL-parsing layer Go's server runs first (net/url), the query rules of url.ParseQuery and
// DecodeParameters, and fast-check properties (never throws; agrees with a split()-based transcription
// of the Go code on arbitrary paths).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { newRequestInfo, RequestInfoError, type RequestInfo } from '../../src/request/requestinfo';
import { Names, segmentHash } from '../../src/request/names';

/** Go tests call http.NewRequest(method, url): split the URL at the first '?'. */
function info(method: string, url: string): RequestInfo | RequestInfoError {
  const q = url.indexOf('?');
  return q === -1 ? newRequestInfo(method, url, '') : newRequestInfo(method, url.slice(0, q), url.slice(q + 1));
}

function mustInfo(method: string, url: string): RequestInfo {
  const r = info(method, url);
  if (r instanceof RequestInfoError) assert.fail(`${method} ${url}: unexpected error ${r.code}: ${r.message}`);
  return r;
}

function errCode(method: string, url: string): string {
  const r = info(method, url);
  assert.ok(r instanceof RequestInfoError, `${method} ${url}: expected an error, got ${JSON.stringify(r)}`);
  return r.code;
}

// TestGetAPIRequestInfo successCases: method, url, verb, apiPrefix, group, version, namespace,
// resource, subresource, name. Go's table lists apiPrefix "api" for the /apis/extensions rows but
// never asserts it; NewRequestInfo sets "apis" there, which is what we check.
type Row = [string, string, string, string, string, string, string, string, string, string];
const successCases: Row[] = [
  // resource paths
  ['GET', '/api/v1/namespaces', 'list', 'api', '', 'v1', '', 'namespaces', '', ''],
  ['GET', '/api/v1/namespaces/other', 'get', 'api', '', 'v1', 'other', 'namespaces', '', 'other'],
  ['GET', '/api/v1/namespaces/other/pods', 'list', 'api', '', 'v1', 'other', 'pods', '', ''],
  ['GET', '/api/v1/namespaces/other/pods/foo', 'get', 'api', '', 'v1', 'other', 'pods', '', 'foo'],
  ['HEAD', '/api/v1/namespaces/other/pods/foo', 'get', 'api', '', 'v1', 'other', 'pods', '', 'foo'],
  ['GET', '/api/v1/pods', 'list', 'api', '', 'v1', '', 'pods', '', ''],
  ['HEAD', '/api/v1/pods', 'list', 'api', '', 'v1', '', 'pods', '', ''],
  ['GET', '/api/v1/namespaces/other/pods/foo', 'get', 'api', '', 'v1', 'other', 'pods', '', 'foo'],
  ['GET', '/api/v1/namespaces/other/pods', 'list', 'api', '', 'v1', 'other', 'pods', '', ''],
  // special verbs
  ['GET', '/api/v1/proxy/namespaces/other/pods/foo', 'proxy', 'api', '', 'v1', 'other', 'pods', '', 'foo'],
  ['GET', '/api/v1/proxy/namespaces/other/pods/foo/subpath/not/a/subresource', 'proxy', 'api', '', 'v1', 'other', 'pods', '', 'foo'],
  ['GET', '/api/v1/watch/pods', 'watch', 'api', '', 'v1', '', 'pods', '', ''],
  ['GET', '/api/v1/pods?watch=true', 'watch', 'api', '', 'v1', '', 'pods', '', ''],
  ['GET', '/api/v1/pods?watch=false', 'list', 'api', '', 'v1', '', 'pods', '', ''],
  ['GET', '/api/v1/watch/namespaces/other/pods', 'watch', 'api', '', 'v1', 'other', 'pods', '', ''],
  ['GET', '/api/v1/namespaces/other/pods?watch=1', 'watch', 'api', '', 'v1', 'other', 'pods', '', ''],
  ['GET', '/api/v1/namespaces/other/pods?watch=0', 'list', 'api', '', 'v1', 'other', 'pods', '', ''],
  // subresource identification
  ['GET', '/api/v1/namespaces/other/pods/foo/status', 'get', 'api', '', 'v1', 'other', 'pods', 'status', 'foo'],
  ['GET', '/api/v1/namespaces/other/pods/foo/proxy/subpath', 'get', 'api', '', 'v1', 'other', 'pods', 'proxy', 'foo'],
  ['PUT', '/api/v1/namespaces/other/finalize', 'update', 'api', '', 'v1', 'other', 'namespaces', 'finalize', 'other'],
  ['PUT', '/api/v1/namespaces/other/status', 'update', 'api', '', 'v1', 'other', 'namespaces', 'status', 'other'],
  // verb identification
  ['PATCH', '/api/v1/namespaces/other/pods/foo', 'patch', 'api', '', 'v1', 'other', 'pods', '', 'foo'],
  ['DELETE', '/api/v1/namespaces/other/pods/foo', 'delete', 'api', '', 'v1', 'other', 'pods', '', 'foo'],
  ['POST', '/api/v1/namespaces/other/pods', 'create', 'api', '', 'v1', 'other', 'pods', '', ''],
  // deletecollection verb identification
  ['DELETE', '/api/v1/nodes', 'deletecollection', 'api', '', 'v1', '', 'nodes', '', ''],
  ['DELETE', '/api/v1/namespaces', 'deletecollection', 'api', '', 'v1', '', 'namespaces', '', ''],
  ['DELETE', '/api/v1/namespaces/other/pods', 'deletecollection', 'api', '', 'v1', 'other', 'pods', '', ''],
  ['DELETE', '/apis/extensions/v1/namespaces/other/pods', 'deletecollection', 'apis', 'extensions', 'v1', 'other', 'pods', '', ''],
  // api group identification
  ['POST', '/apis/extensions/v1/namespaces/other/pods', 'create', 'apis', 'extensions', 'v1', 'other', 'pods', '', ''],
  // api version identification
  ['POST', '/apis/extensions/v1beta3/namespaces/other/pods', 'create', 'apis', 'extensions', 'v1beta3', 'other', 'pods', '', ''],
];

test('TestGetAPIRequestInfo: success cases', () => {
  for (const [method, url, verb, apiPrefix, apiGroup, apiVersion, namespace, resource, subresource, name] of successCases) {
    const r = mustInfo(method, url);
    assert.deepEqual(
      { ...r },
      { isResourceRequest: true, path: url.split('?')[0], verb, apiPrefix, apiGroup, apiVersion, namespace, resource, subresource, name },
      `${method} ${url}`,
    );
  }
});

test('TestGetAPIRequestInfo: "error" cases are non-resource requests, not errors', () => {
  const cases: Record<string, string> = {
    'no resource path': '/',
    'just apiversion': '/api/version/',
    'just prefix, group, version': '/apis/group/version/',
    'apiversion with no resource': '/api/version/',
    'bad prefix': '/badprefix/version/resource',
    'missing api group': '/apis/version/resource',
  };
  for (const [desc, url] of Object.entries(cases)) {
    assert.equal(mustInfo('GET', url).isResourceRequest, false, desc);
  }
});

test('TestGetNonAPIRequestInfo', () => {
  const cases: Record<string, [string, boolean]> = {
    'simple groupless': ['/api/version/resource', true],
    'simple group': ['/apis/group/version/resource/name/subresource', true],
    'more steps': ['/api/version/resource/name/subresource', true],
    'group list': ['/apis/batch/v1/job', true],
    'group get': ['/apis/batch/v1/job/foo', true],
    'group subresource': ['/apis/batch/v1/job/foo/scale', true],
    'bad root': ['/not-api/version/resource', false],
    'group without enough steps': ['/apis/extensions/v1beta1', false],
    'group without enough steps 2': ['/apis/extensions/v1beta1/', false],
    'not enough steps': ['/api/version', false],
    'one step': ['/api', false],
    'zero step': ['/', false],
    empty: ['', false],
  };
  for (const [desc, [url, resource]] of Object.entries(cases)) {
    assert.equal(mustInfo('GET', url).isResourceRequest, resource, desc);
  }
});

test('TestSelectorParsing: names from fieldSelector, verbs', () => {
  // [name, method, url, expectedName, expectedVerb]; the field/label selector strings the Go test also
  // checks belong to RequestInfo fields (AuthorizeWithSelectors) that mvproxy does not carry.
  const cases: [string, string, string, string, string][] = [
    ['no selector', 'GET', '/apis/group/version/resource', '', 'list'],
    ['metadata.name selector', 'GET', '/apis/group/version/resource?fieldSelector=metadata.name=name1', 'name1', 'list'],
    ['metadata.name selector with watch', 'GET', '/apis/group/version/resource?watch=true&fieldSelector=metadata.name=name1', 'name1', 'watch'],
    ['random selector', 'GET', '/apis/group/version/resource?fieldSelector=foo=bar&labelSelector=baz=qux', '', 'list'],
    ['invalid selector with metadata.name', 'GET', '/apis/group/version/resource?fieldSelector=metadata.name=name1,foo', '', 'list'],
    ['invalid selector with metadata.name with watch', 'GET', '/apis/group/version/resource?fieldSelector=metadata.name=name1,foo&watch=true', '', 'watch'],
    ['invalid selector with metadata.name with watch false', 'GET', '/apis/group/version/resource?fieldSelector=metadata.name=name1,foo&watch=false', '', 'list'],
    ['selector on deletecollection is honored', 'DELETE', '/apis/group/version/resource?fieldSelector=foo=bar&labelSelector=baz=qux', '', 'deletecollection'],
    [
      'selector on repeated param matches parsed param',
      'GET',
      '/apis/group/version/resource?fieldSelector=metadata.name=foo&fieldSelector=metadata.name=bar&labelSelector=foo=bar&labelSelector=foo=baz',
      'foo',
      'list',
    ],
    ['selector on other verb is ignored', 'GET', '/apis/group/version/resource/name?fieldSelector=foo=bar&labelSelector=foo=bar', 'name', 'get'],
    ['selector on deprecated root type watch is not parsed', 'GET', '/apis/group/version/watch/resource?fieldSelector=metadata.name=foo&labelSelector=foo=bar', '', 'watch'],
    ['selector on deprecated root item watch is not parsed', 'GET', '/apis/group/version/watch/resource/name?fieldSelector=metadata.name=foo&labelSelector=foo=bar', 'name', 'watch'],
  ];
  for (const [desc, method, url, name, verb] of cases) {
    const r = mustInfo(method, url);
    assert.equal(r.name, name, `${desc}: name`);
    assert.equal(r.verb, verb, `${desc}: verb`);
  }
});

test('docs/kubernetes-mvp.md §2.1: discovery paths, namespaces, trailing slashes, verb-via-path errors', () => {
  // /apis/g/v is non-resource (Go sets APIPrefix before the "four parts" check); /api/v1 too.
  assert.deepEqual(
    { ...mustInfo('GET', '/apis/g/v') },
    { isResourceRequest: false, path: '/apis/g/v', verb: 'get', apiPrefix: 'apis', apiGroup: '', apiVersion: '', namespace: '', resource: '', subresource: '', name: '' },
  );
  assert.equal(mustInfo('GET', '/api/v1').isResourceRequest, false);
  assert.equal(mustInfo('GET', '/api/v1').apiPrefix, '');
  for (const p of ['/api', '/apis', '/apis/g', '/healthz', '/readyz', '/version', '/openapi/v3', '/.well-known/openid-configuration']) {
    assert.equal(mustInfo('GET', p).isResourceRequest, false, p);
  }
  // /apis/g/v/namespaces is the namespaces resource of group g
  const ns = mustInfo('GET', '/apis/g/v/namespaces');
  assert.deepEqual([ns.isResourceRequest, ns.apiGroup, ns.apiVersion, ns.resource, ns.verb], [true, 'g', 'v', 'namespaces', 'list']);
  // /api/v1/namespaces/ns1 is the namespace ns1 itself
  const ns1 = mustInfo('GET', '/api/v1/namespaces/ns1');
  assert.deepEqual([ns1.resource, ns1.name, ns1.namespace, ns1.subresource, ns1.verb], ['namespaces', 'ns1', 'ns1', '', 'get']);
  const status = mustInfo('GET', '/api/v1/namespaces/ns1/status');
  assert.deepEqual([status.resource, status.name, status.namespace, status.subresource], ['namespaces', 'ns1', 'ns1', 'status']);
  const fin = mustInfo('PUT', '/api/v1/namespaces/ns1/finalize');
  assert.deepEqual([fin.resource, fin.name, fin.subresource, fin.verb], ['namespaces', 'ns1', 'finalize', 'update']);
  // any other third part makes it a namespaced resource
  const pods = mustInfo('GET', '/api/v1/namespaces/ns1/pods/p/log');
  assert.deepEqual([pods.namespace, pods.resource, pods.name, pods.subresource], ['ns1', 'pods', 'p', 'log']);
  // trailing slashes, and python clients' /api/ and /apis/
  assert.deepEqual({ ...mustInfo('GET', '/api/v1/pods/') }, { ...mustInfo('GET', '/api/v1/pods'), path: '/api/v1/pods/' });
  assert.equal(mustInfo('GET', '//api//v1/pods//').apiVersion, '', 'inner empty parts are kept, like strings.Split');
  assert.deepEqual([mustInfo('GET', '/api/').isResourceRequest, mustInfo('GET', '/apis/').isResourceRequest], [false, false]);
  assert.equal(mustInfo('GET', '/apis/apps/v1/deployments/').resource, 'deployments');
  // verb via path with nothing after it
  assert.equal(errCode('GET', '/apis/g/v/watch'), 'MVP_ERR_REQUESTINFO_WATCH_PATH');
  assert.equal(errCode('GET', '/apis/g/v/watch/'), 'MVP_ERR_REQUESTINFO_WATCH_PATH');
  assert.equal(errCode('GET', '/api/v1/watch'), 'MVP_ERR_REQUESTINFO_WATCH_PATH');
  assert.equal(errCode('POST', '/api/v1/proxy'), 'MVP_ERR_REQUESTINFO_PROXY_PATH');
  const e = info('GET', '/apis/g/v/watch');
  assert.ok(e instanceof RequestInfoError && e instanceof Error && e.name === 'RequestInfoError');
  // field selector name (list and watch), and the == form
  assert.equal(mustInfo('GET', '/api/v1/namespaces/d/pods?fieldSelector=metadata.name%3Dweb-0').name, 'web-0');
  assert.equal(mustInfo('GET', '/api/v1/pods?fieldSelector=metadata.name%3D%3Dweb-0&watch=1').name, 'web-0');
  assert.equal(mustInfo('GET', '/api/v1/pods?fieldSelector=metadata.name%3D%3Dweb-0&watch=1').verb, 'watch');
});

test('verbs: methods are case-sensitive; non-resource verbs are the lowercase method', () => {
  assert.equal(mustInfo('OPTIONS', '/api/v1/pods').verb, '');
  assert.equal(mustInfo('get', '/api/v1/pods/x').verb, '', 'Go compares req.Method with "GET" exactly');
  assert.equal(mustInfo('CONNECT', '/api/v1/namespaces/a/pods/b/exec').verb, '');
  assert.equal(mustInfo('POST', '/api/v1/namespaces/a/pods/b/exec').verb, 'create');
  assert.equal(mustInfo('GET', '/healthz').verb, 'get');
  assert.equal(mustInfo('OPTIONS', '/').verb, 'options');
  assert.equal(mustInfo('PROPFIND', '/x').verb, 'propfind');
  // the verb via path wins over the method
  assert.equal(mustInfo('POST', '/api/v1/watch/pods').verb, 'watch');
  assert.equal(mustInfo('DELETE', '/api/v1/proxy/nodes/n1').verb, 'proxy');
  // proxy takes no subresource; watch does
  const px = mustInfo('GET', '/api/v1/proxy/nodes/n1/stats');
  assert.deepEqual([px.resource, px.name, px.subresource], ['nodes', 'n1', '']);
  const wx = mustInfo('GET', '/api/v1/watch/namespaces/a/pods/b/status');
  assert.deepEqual([wx.resource, wx.name, wx.subresource, wx.verb], ['pods', 'b', 'status', 'watch']);
  // an empty name part is "no name": get becomes list, delete becomes deletecollection
  assert.equal(mustInfo('GET', '/api/v1/pods//status').verb, 'list');
  assert.equal(mustInfo('DELETE', '/api/v1/pods//status').verb, 'deletecollection');
});

test('URL layer: percent-decoding as req.URL.Path, invalid escapes, control characters', () => {
  const r = mustInfo('GET', '/api/v1/namespaces/a%2Db/pods/c%2Ed');
  assert.deepEqual([r.path, r.namespace, r.name], ['/api/v1/namespaces/a-b/pods/c.d', 'a-b', 'c.d']);
  // %2F decodes to '/' before the split, exactly as Go's Path
  const slash = mustInfo('GET', '/api/v1/namespaces/a%2Fb/pods');
  assert.deepEqual([slash.path, slash.namespace, slash.resource, slash.name], ['/api/v1/namespaces/a/b/pods', 'a', 'b', 'pods']);
  assert.equal(mustInfo('GET', '/ap%69/v1/pods').apiPrefix, 'api');
  assert.equal(mustInfo('GET', '/api/v1/%77atch/pods').verb, 'watch');
  assert.equal(mustInfo('GET', '/api/v1/pods/a+b').name, 'a+b', "'+' is not a space in a path");
  assert.equal(mustInfo('GET', '/api/v1/pods/%C3%A9t%C3%A9').name, 'été');
  assert.equal(mustInfo('GET', '/api/v1/pods/été').name, 'été');
  assert.equal(mustInfo('GET', '/api/v1/pods/%EF%BB%BFx').name, '\ufeffx', 'a BOM is data, not stripped');
  assert.equal(mustInfo('GET', '/api/v1/pods/%FFx').name, '\ufffdx', 'invalid UTF-8 reads as U+FFFD');
  assert.equal(mustInfo('GET', '/api/v1/pods/%25').name, '%');
  for (const bad of ['/api/v1/pods/%', '/api/v1/pods/%4', '/api/v1/pods/%zz', '/api/v1/pods/%%41', '/%G0/v1/pods']) {
    assert.equal(errCode('GET', bad), 'MVP_ERR_REQUESTINFO_INVALID_ESCAPE', bad);
  }
  // a control byte wins over a bad escape, wherever each is (url.parse checks before it unescapes)
  for (const bad of ['/api/v1/pods\u0000', '/api/v1/po\tds', '/api/v1/pods\u007f', '/api/v1/pods?watch=\n1', '/api/v1/pods/%zz?x=\u0001', '/a%zz\t', '\t/a%zz', '//\u001f/api/v1/pods']) {
    assert.equal(errCode('GET', bad), 'MVP_ERR_REQUESTINFO_CONTROL_CHARACTER', JSON.stringify(bad));
  }
  // UTF-8 writes a non-ASCII character as bytes >= 0x80: none reads as a control byte, and one next to it still counts
  assert.equal(mustInfo('GET', '/api/v1/pods?x=\u0101\u0100\u2001é').verb, 'list');
  assert.equal(errCode('GET', '/api/v1/pods?x=é\u007f'), 'MVP_ERR_REQUESTINFO_CONTROL_CHARACTER');
  assert.equal(errCode('GET', `/api/v1/pods?x=${'é'.repeat(5000)}\u0001`), 'MVP_ERR_REQUESTINFO_CONTROL_CHARACTER');
  // an escaped control byte is fine: it is data after decoding
  assert.equal(mustInfo('GET', '/api/v1/pods/%00').name, '\u0000');
  assert.equal(mustInfo('GET', '/api/v1/pods/%00%2F%7F/x').subresource, '\u007f', 'a decoded path is split at every /, control bytes or not');
});

test('query: url.ParseQuery rules for the keys NewRequestInfo reads', () => {
  const verb = (q: string) => mustInfo('GET', `/api/v1/pods?${q}`).verb;
  const name = (q: string) => mustInfo('GET', `/api/v1/pods?${q}`).name;
  // Convert_Slice_string_To_bool: only "0" and EqualFold "false" are false, even "" is true
  for (const v of ['true', '1', 'yes', 'TRUE', '', 'f', '0.0', ' false']) assert.equal(verb(`watch=${v}`), 'watch', `watch=${v}`);
  for (const v of ['false', 'FALSE', 'False', 'fAlSe', '0', 'fal%73e', 'FAL%C5%BFE']) assert.equal(verb(`watch=${v}`), 'list', `watch=${v}`);
  assert.equal(verb('watch'), 'watch', 'a key without = has the value ""');
  assert.equal(verb('watch=0&watch=1'), 'list', 'first value wins');
  assert.equal(verb('watch=1&watch=0'), 'watch');
  assert.equal(verb('w%61tch=1'), 'watch', 'keys are unescaped too');
  assert.equal(verb('watch+=1'), 'list', "'+' in a key is a space: 'watch ' is another key");
  assert.equal(verb('watch=1;x'), 'list', "a ';' anywhere drops the pair (Go 1.17+)");
  assert.equal(verb('x;y&watch=1'), 'watch', 'only that pair');
  assert.equal(verb('watch=%zz&watch=1'), 'watch', 'a pair whose value does not unescape is dropped; the next one counts');
  assert.equal(verb('wat%zzch=0&watch=1'), 'watch');
  assert.equal(verb('&&watch=1&'), 'watch');
  assert.equal(verb('Watch=1'), 'list', 'keys are case-sensitive');
  // '+' is a space in values; the name keeps it
  assert.equal(name('fieldSelector=metadata.name%3Da+b'), 'a b');
  assert.equal(name('fieldSelector=metadata.name=a%2Bb'), 'a+b');
  // more than 10000 parameters: Go's ParseQuery returns no values at all (urlmaxqueryparams)
  assert.equal(verb('watch=1' + '&'.repeat(9999)), 'watch', '10000 parameters');
  assert.equal(verb('watch=1' + '&'.repeat(10000)), 'list', '10001 parameters');
});

test('query: DecodeParameters errors drop the name and fall back to ToLower for watch', () => {
  const r = (q: string) => {
    const i = mustInfo('GET', `/api/v1/pods?${q}`);
    return `${i.verb}:${i.name}`;
  };
  const fs = 'fieldSelector=metadata.name%3Dn1';
  assert.equal(r(fs), 'list:n1');
  // label selectors that labels.Parse accepts keep the name
  for (const ls of ['a', '!a', 'a=b', 'a==b', 'a!=b', 'a in (b,c)', 'a notin (b)', 'a in ()', 'a in (,)', 'x>1', 'x<10', 'example.com/a=b', 'a,b', ' a = b ', 'in in (in)', 'a=']) {
    assert.equal(r(`labelSelector=${encodeURIComponent(ls)}&${fs}`), 'list:n1', `valid labelSelector ${JSON.stringify(ls)}`);
  }
  // Lexer.read() returns 0 for a NUL byte as at the end: at a token start it ends the input, inside a
  // token it ends the token (and is consumed)
  assert.equal(r(`labelSelector=%00anything%20goes&${fs}`), 'list:n1');
  assert.equal(r(`labelSelector=a%3Db%20%00junk&${fs}`), 'list:n1');
  assert.equal(r(`labelSelector=a%00&${fs}`), 'list:n1');
  assert.equal(r(`labelSelector=a%00junk&${fs}`), 'list:', 'two identifiers: a, junk');
  assert.equal(r(`labelSelector=a%3Db%2C%00junk&${fs}`), 'list:n1', "scanSpecialSymbol swallows the NUL: a=b,junk");
  assert.equal(r(`labelSelector=a%3Db%2C%20%00junk&${fs}`), 'list:', "end of input right after ','");
  // ones it rejects drop the name
  for (const ls of ['a!!', '!a=b', 'a=b=c', 'a in b', 'a in (b', '-a', 'a-', 'a/b/c', '/a', 'A.B/c', 'a=-b', 'x>a', 'x>-1', 'x>99999999999999999999', 'a,', ',a', 'a b', 'a=(b)', 'a'.repeat(64), `a=${'b'.repeat(64)}`, 'é']) {
    assert.equal(r(`labelSelector=${encodeURIComponent(ls)}&${fs}`), 'list:', `invalid labelSelector ${JSON.stringify(ls)}`);
  }
  // limit and timeoutSeconds must be int64
  for (const v of ['500', '-1', '+7', '0009223372036854775807', '-9223372036854775808']) assert.equal(r(`limit=${encodeURIComponent(v)}&${fs}`), 'list:n1', `limit=${v}`);
  for (const v of ['', 'x', '1.5', '1_000', '9223372036854775808', '0x10', ' 1']) assert.equal(r(`limit=${encodeURIComponent(v)}&${fs}`), 'list:', `limit=${v}`);
  assert.equal(r(`timeoutSeconds=30&${fs}`), 'list:n1');
  assert.equal(r(`timeoutSeconds=thirty&${fs}`), 'list:');
  // the fallback reads watch with strings.ToLower: U+017F (ſ) is not 's' there, but is for EqualFold
  assert.equal(r('watch=FAL%C5%BFE'), 'list:');
  assert.equal(r('watch=FAL%C5%BFE&limit=x'), 'watch:');
  assert.equal(r('watch=FALSE&limit=x'), 'list:');
  assert.equal(r('watch=&limit=x'), 'watch:');
});

test('query: fields.ParseSelector + RequiresExactMatch("metadata.name")', () => {
  const name = (sel: string) => mustInfo('GET', `/api/v1/pods?fieldSelector=${encodeURIComponent(sel)}`).name;
  assert.equal(name('metadata.name=a'), 'a');
  assert.equal(name('metadata.name==a'), 'a');
  assert.equal(name('metadata.name!=a'), '', '!= is not an exact match');
  assert.equal(name('metadata.namespace=x,metadata.name=a'), 'a');
  assert.equal(name('metadata.name=b,metadata.name=a'), 'a', 'terms are sorted; the lowest metadata.name term wins');
  assert.equal(name('metadata.name=a\\,b'), 'a,b', 'escaped comma');
  assert.equal(name('metadata.name=a\\=b\\\\c'), 'a=b\\c');
  assert.equal(name('metadata.name=a,'), 'a', 'empty terms are skipped');
  assert.equal(name(' metadata.name=a'), '', 'the field is not trimmed');
  assert.equal(name('status.phase=Running'), '');
  assert.equal(name('metadata.name='), '');
  // invalid selectors: no name at all
  for (const bad of ['metadata.name=a=b', 'metadata.name=a,foo', 'metadata.name=a\\x', 'metadata.name=a\\', 'metadata.name!==a', 'foo']) {
    assert.equal(name(bad), '', bad);
  }
  // path.IsValidPathSegmentName
  for (const bad of ['.', '..', 'a/b', 'a%b']) assert.equal(name(`metadata.name=${bad}`), '', bad);
  assert.equal(name('metadata.name=...'), '...');
  // only for get → list/watch: not for deletecollection
  const del = mustInfo('DELETE', '/api/v1/pods?fieldSelector=metadata.name%3Da');
  assert.deepEqual([del.verb, del.name], ['deletecollection', '']);
});

test('result objects have exactly the RequestInfo fields, all strings but isResourceRequest', () => {
  for (const url of ['/api/v1/pods', '/healthz', '/apis/g/v', '/api/v1/namespaces/a/pods/b/status?watch=1']) {
    const r = mustInfo('GET', url);
    assert.deepEqual(Object.keys(r).sort(), ['apiGroup', 'apiPrefix', 'apiVersion', 'isResourceRequest', 'name', 'namespace', 'path', 'resource', 'subresource', 'verb']);
  }
});

// A direct transcription of NewRequestInfo with arrays (Go's splitPath and slices), used as an oracle
// for paths without '%' or control characters and an empty query.
function reference(method: string, path: string): RequestInfo | 'error' {
  const lower = method.toLowerCase();
  const out: RequestInfo = { isResourceRequest: false, path, verb: lower, apiPrefix: '', apiGroup: '', apiVersion: '', namespace: '', resource: '', subresource: '', name: '' };
  const trimmed = path.replace(/^\/+/, '').replace(/\/+$/, '');
  let parts = trimmed === '' ? [] : trimmed.split('/');
  if (parts.length < 3) return out;
  if (parts[0] !== 'api' && parts[0] !== 'apis') return out;
  out.apiPrefix = parts[0];
  parts = parts.slice(1);
  if (out.apiPrefix !== 'api') {
    if (parts.length < 3) return out;
    out.apiGroup = parts[0];
    parts = parts.slice(1);
  }
  out.isResourceRequest = true;
  out.apiVersion = parts[0];
  parts = parts.slice(1);
  if (parts[0] === 'watch' || parts[0] === 'proxy') {
    if (parts.length < 2) return 'error';
    out.verb = parts[0];
    parts = parts.slice(1);
  } else {
    out.verb = { POST: 'create', GET: 'get', HEAD: 'get', PUT: 'update', PATCH: 'patch', DELETE: 'delete' }[method] ?? '';
  }
  if (parts[0] === 'namespaces') {
    if (parts.length > 1) {
      out.namespace = parts[1];
      if (parts.length > 2 && parts[2] !== 'status' && parts[2] !== 'finalize') parts = parts.slice(2);
    }
  }
  if (parts.length >= 3 && out.verb !== 'proxy') out.subresource = parts[2];
  if (parts.length >= 2) out.name = parts[1];
  if (parts.length >= 1) out.resource = parts[0];
  if (out.name === '' && out.verb === 'get') out.verb = 'list';
  if (out.name === '' && out.verb === 'delete') out.verb = 'deletecollection';
  return out;
}

const segment = fc.constantFrom('api', 'apis', 'v1', 'g', 'apps', 'namespaces', 'ns', 'watch', 'proxy', 'status', 'finalize', 'pods', 'x', '', 'api ', 'WATCH', 'é');
const methods = fc.constantFrom('GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'get', 'CONNECT');
const urlishPath = fc
  .tuple(fc.array(segment, { maxLength: 9 }), fc.boolean(), fc.boolean())
  .map(([segs, lead, trail]) => (lead ? '/' : '') + segs.join('/') + (trail ? '/' : ''));

// Names holding most of the segments the generator uses, so both ways of taking a part (one of names,
// or cut out of the path) are exercised on the same inputs.
const SEGMENT_NAMES = new Names(['v1', 'g', 'apps', 'pods', 'x', 'namespaces', 'status', '', 'é', 'watch']);

test('property: agrees with the split()-based transcription of the Go code', () => {
  fc.assert(
    fc.property(methods, urlishPath, fc.boolean(), (method, path, withNames) => {
      const got = newRequestInfo(method, path, '', withNames ? SEGMENT_NAMES : undefined);
      const want = reference(method, path);
      if (want === 'error') {
        assert.ok(got instanceof RequestInfoError);
        assert.ok(got.code === 'MVP_ERR_REQUESTINFO_WATCH_PATH' || got.code === 'MVP_ERR_REQUESTINFO_PROXY_PATH');
      } else {
        assert.deepEqual(got, want);
      }
    }),
    { numRuns: 10000 },
  );
});

test("names: a request's group, version and resource come from the route table's names when they are one", () => {
  // Records what find() answers: a miss for a name it holds would mean a part's range or bytes were
  // wrong (the values would still be right, the lookup slower).
  class Recording extends Names {
    readonly found: (string | undefined)[] = [];
    override find(bytes: DataView, start: number, end: number): string | undefined {
      const r = super.find(bytes, start, end);
      this.found.push(r);
      return r;
    }
  }
  const names = new Recording(['', 'v1', 'apps', 'deployments', 'pods', 'events.k8s.io', 'events', 'flowcontrol.apiserver.k8s.io', 'v1beta3', 'é', 'Āpps', 'pvcs', 'pads', 'p']);
  const cases: [url: string, found: (string | undefined)[]][] = [
    ['/apis/apps/v1/namespaces/ns/deployments/web', ['apps', 'v1', 'deployments']],
    ['/api/v1/pods', ['v1', 'pods']],
    ['//api//v1/pods//', ['', 'v1']], // parts api, "", v1, pods: version "", resource "v1", name "pods"
    ['/apis/events.k8s.io/v1/watch/namespaces/a/events?watch=1', ['events.k8s.io', 'v1', 'events']],
    ['/apis/flowcontrol.apiserver.k8s.io/v1beta3/prioritylevelconfigurations/x/status', ['flowcontrol.apiserver.k8s.io', 'v1beta3', undefined]],
    ['/apis/apps/v2/deployments', ['apps', undefined, 'deployments']],
    ['/apis/%61pps/v1/deployments', ['apps', 'v1', 'deployments']], // the decoded path is scanned again
    [`/apis/apps/v1/namespaces/${'n'.repeat(600)}/deployments`, ['apps', 'v1', 'deployments']], // longer than the code buffer's first size
    [`/apis/apps/v1/namespaces/ns/deployments/a${'/b'.repeat(40)}`, ['apps', 'v1', 'deployments']], // more '/' than are recorded
    // a part with a non-ASCII character is cut out, never taken from names (names.ts: bytes); its
    // neighbours still are, at the right offsets
    ['/apis/é/v1/pods', [undefined, 'v1', 'pods']],
    ['/apis/Āpps/v1/namespaces/é/deployments', [undefined, 'v1', 'deployments']],
    ['/apis/%C3%A9/v1/pods', [undefined, 'v1', 'pods']],
    // pods, pvcs and pads share length, first and last byte (one slot hash): each finds itself
    ['/api/v1/pvcs', ['v1', 'pvcs']],
    ['/api/v1/pads', ['v1', 'pads']],
    ['/api/v1/pids', ['v1', undefined]],
    ['/api/v1/p', ['v1', 'p']],
    // the query is checked for control bytes through the same buffer, behind the path: a query that
    // makes it grow must leave the path's bytes as they were
    [`/apis/apps/v1/deployments?limit=${'1'.repeat(3000)}é`, ['apps', 'v1', 'deployments']],
  ];
  for (const [url, found] of cases) {
    names.found.length = 0;
    const withNames = info('GET', url);
    const q = url.indexOf('?');
    const without = q === -1 ? newRequestInfo('GET', url, '') : newRequestInfo('GET', url.slice(0, q), url.slice(q + 1));
    assert.deepEqual(withNames, without, url);
    assert.deepEqual(names.found, found, url);
  }
  function info(method: string, url: string) {
    const q = url.indexOf('?');
    return q === -1 ? newRequestInfo(method, url, '', names) : newRequestInfo(method, url.slice(0, q), url.slice(q + 1), names);
  }
  const view = (s: string) => new DataView(new TextEncoder().encode(s).buffer);
  assert.equal(segmentHash(view('xpodsx'), 1, 5), segmentHash(view('pvcs'), 0, 4), 'the slot hash reads length, first and last byte');
});

const anyUtf16 = fc.array(fc.integer({ min: 0, max: 0xffff }), { maxLength: 40 }).map((a) => String.fromCharCode(...a));
const queryPiece = fc.constantFrom('watch', 'fieldSelector', 'labelSelector', 'limit', 'timeoutSeconds', '=', '&', ';', '%', '%3D', '%2', '%zz', '+', 'metadata.name', '==', '!=', ',', '\\', 'in', '(', ')', '!', '0', '1', 'false', 'a', '%00', '%C5%BF', 'é', ' ');
const urlishQuery = fc.array(queryPiece, { maxLength: 24 }).map((a) => a.join(''));
const pathPiece = fc.constantFrom('/', 'api', 'apis', 'v1', 'namespaces', 'watch', 'proxy', 'status', '%', '%2F', '%2f', '%zz', '%4', '%C3%A9', '%FF', '%00', '+', '.', '..', 'é', '\ud800', '?', '#');
const urlishRawPath = fc.array(pathPiece, { maxLength: 14 }).map((a) => a.join(''));

test('property: never throws; always a RequestInfo or a RequestInfoError with a known code', () => {
  const codes = new Set(['MVP_ERR_REQUESTINFO_INVALID_ESCAPE', 'MVP_ERR_REQUESTINFO_CONTROL_CHARACTER', 'MVP_ERR_REQUESTINFO_WATCH_PATH', 'MVP_ERR_REQUESTINFO_PROXY_PATH']);
  const check = (method: string, path: string, query: string) => {
    const r = newRequestInfo(method, path, query);
    if (r instanceof RequestInfoError) {
      assert.ok(codes.has(r.code), r.code);
      return;
    }
    assert.equal(typeof r.isResourceRequest, 'boolean');
    for (const k of ['path', 'verb', 'apiPrefix', 'apiGroup', 'apiVersion', 'namespace', 'resource', 'subresource', 'name'] as const) {
      assert.equal(typeof r[k], 'string', k);
    }
    if (!r.isResourceRequest) assert.equal(r.resource, '');
  };
  fc.assert(
    fc.property(fc.oneof(methods, fc.string()), fc.oneof(urlishRawPath, fc.string({ unit: 'binary' }), anyUtf16), fc.oneof(urlishQuery, fc.string({ unit: 'binary' }), anyUtf16), check),
    { numRuns: 20000 },
  );
  // and with resource paths, so the list/watch query branch runs on arbitrary queries
  fc.assert(
    fc.property(fc.constantFrom('/api/v1/pods', '/apis/g/v/namespaces/n/r', '/api/v1/namespaces'), fc.oneof(urlishQuery, fc.string({ unit: 'binary' }), anyUtf16), (path, query) => check('GET', path, query)),
    { numRuns: 10000 },
  );
});

test('selectorName false (the proxy): no name from the fieldSelector, the same verb, also where only validation decides it', () => {
  const routing = (url: string) => {
    const q = url.indexOf('?');
    return newRequestInfo('GET', url.slice(0, q), url.slice(q + 1), undefined, false) as RequestInfo;
  };
  const full = (url: string) => mustInfo('GET', url);
  const selected = '/api/v1/namespaces/a/pods?fieldSelector=metadata.name%3Dfoo&watch=1';
  assert.deepEqual([full(selected).verb, full(selected).name], ['watch', 'foo']);
  assert.deepEqual([routing(selected).verb, routing(selected).name], ['watch', '']);
  assert.deepEqual(routing(selected), { ...full(selected), name: '' });
  // 'ſ' (U+017F) folds to 's' (EqualFold) but does not lower to it (ToLower): with a limit that does
  // not parse, DecodeParameters fails and the error branch's ToLower makes "falſe" a watch.
  for (const [url, verb] of [
    ['/api/v1/pods?watch=fal%C5%BFe', 'list'],
    ['/api/v1/pods?watch=fal%C5%BFe&limit=x', 'watch'],
    ['/api/v1/pods?watch=FALSE&limit=x', 'list'],
    ['/api/v1/pods?watch=true&labelSelector=%21%21', 'watch'],
    ['/api/v1/pods?w%61tch=0', 'list'],
    // a watch key spelled with escapes is still one (the query holds no plain "watch")
    ['/api/v1/pods?w%61tch=1', 'watch'],
    ['/api/v1/pods?%77atch=true', 'watch'],
    ['/api/v1/pods?wa%74%63%68=1', 'watch'],
    ['/api/v1/pods?limit=5&%57atch=1', 'list'], // %57 is 'W': keys are case-sensitive
    ['/api/v1/pods?watch;=1&watch=', 'watch'],
    ['/api/v1/pods?limit=500', 'list'],
    // read from the query's bytes (TargetBytes.plainWatchValue): the first pair keyed "watch" decides
    ['/api/v1/pods?resourceVersion=5&watch=true&watch=false', 'watch'],
    ['/api/v1/pods?watch=FaLsE&watch=1', 'list'],
    ['/api/v1/pods?watch=0', 'list'],
    ['/api/v1/pods?watch=00', 'watch'],
    ['/api/v1/pods?watch', 'watch'],
    ['/api/v1/pods?watch&watch=0', 'watch'],
    ['/api/v1/pods?watchx=1&xwatch=1', 'list'],
    ['/api/v1/pods?x61=1&watch=0', 'list'], // "61" without its '%' escapes nothing
    ['/api/v1/pods?allowWatchBookmarks=true&watch=0', 'list'],
    // ';' drops a pair in Go (so "watch=0" is the first value); '+' is a space, so never "0" or "false"
    ['/api/v1/pods?watch=1;&watch=0', 'list'],
    ['/api/v1/pods?watch=0;&watch=1', 'watch'],
    ['/api/v1/pods?watch=+0&watch=0', 'watch'],
    ['/api/v1/pods?watch=fal+se', 'watch'],
    // a path whose decoded UTF-8 is longer than the raw path (non-ASCII characters and an escape)
    // reaches the bytes the query was written to ("watch" → "pods"); the query is then read from the string
    ['/api/v1/namespaces/éééééé%41/pods?watch=true', 'watch'],
    ['/api/v1/namespaces/éé%41éééé/pods?watch=1&limit=1', 'watch'],
  ] as const) {
    assert.equal(full(url).verb, verb, url);
    assert.equal(routing(url).verb, verb, url);
  }
  // a name in the path stays
  assert.equal(routing('/api/v1/watch/namespaces/a/pods/b?fieldSelector=metadata.name%3Dc').name, 'b');
});

// The request path's call (names, selectorName false) against the whole port, on arbitrary inputs:
// the same result but for a list's or watch's name from the fieldSelector. Queries lean on the watch
// key's spellings (escaped letters, case, 'ſ') and on values that fail DecodeParameters.
const watchPiece = fc.constantFrom('watch', 'w%61tch', '%77atch', 'wat%63h', 'WATCH', '=', '&', ';', '0', '1', 'true', 'false', 'FALSE', 'fal%C5%BFe', 'falſe', 'limit=x', 'limit=5', 'labelSelector=%21%21', 'fieldSelector=metadata.name%3Dfoo', '%', '%7', 'w', 'é', '\u0001');
const watchishQuery = fc.oneof(
  fc.array(watchPiece, { maxLength: 12 }).map((a) => a.join('')),
  // a watch pair among pairs that may make DecodeParameters fail, in any order
  fc
    .tuple(
      fc.constantFrom('watch', 'w%61tch', '%77atch', 'WATCH', 'watch;'),
      fc.constantFrom('', '0', '1', 'true', 'false', 'FALSE', 'fal%C5%BFe', 'falſe', 'FALſE', '%', 'é', 'true;x', '0;', '+0', 'fal+se'),
      fc.subarray(['limit=x', 'limit=5', 'timeoutSeconds=1.5', 'labelSelector=%21%21', 'labelSelector=a%3Db', 'fieldSelector=metadata.name%3Dfoo', 'fieldSelector=a', 'watch=0']),
      fc.boolean(),
    )
    .map(([key, value, rest, first]) => (first ? [`${key}=${value}`, ...rest] : [...rest, `${key}=${value}`]).join('&')),
);
const ROUTE_NAMES = new Names(['', 'v1', 'apps', 'pods', 'namespaces', 'deployments', 'g', 'r', 'é']);

test('property: with names and selectorName false, the same RequestInfo but for the selector name', () => {
  fc.assert(
    fc.property(
      fc.oneof(methods, fc.string()),
      fc.oneof(fc.constantFrom('/api/v1/pods', '/apis/apps/v1/namespaces/a/deployments', '/api/v1/watch/pods', '/api/v1/namespaces/x/pods/y', '/apis/g/v1/r'), urlishRawPath, urlishPath, anyUtf16),
      fc.oneof(watchishQuery, urlishQuery, fc.string({ unit: 'binary' }), anyUtf16),
      (method, path, query) => {
        const full = newRequestInfo(method, path, query);
        const routing = newRequestInfo(method, path, query, ROUTE_NAMES, false);
        if (full instanceof RequestInfoError) {
          assert.ok(routing instanceof RequestInfoError);
          assert.equal(routing.code, full.code);
          return;
        }
        // the name a path gives is kept; only one read from the query goes
        const pathName = (newRequestInfo(method, path, '') as RequestInfo).name;
        assert.deepEqual(routing, { ...full, name: pathName });
      },
    ),
    { numRuns: 20000 },
  );
});

// Go's TestRejectControlCharacters (net/url, stringContainsCTLByte), on the request target: the check
// newRequestInfo makes on the path (scanPath) and on the query (scanQuery).
test('TestRejectControlCharacters: bytes < 0x20 and 0x7f, but not non-ASCII control characters, in the path and in the query', () => {
  const rejected = (s: string) => {
    const asPath = newRequestInfo('GET', s.startsWith('/') ? s : '/' + s, '');
    const asQuery = newRequestInfo('GET', '/api/v1/pods', s);
    const ctl = (r: RequestInfo | RequestInfoError) => r instanceof RequestInfoError && r.code === 'MVP_ERR_REQUESTINFO_CONTROL_CHARACTER';
    assert.equal(ctl(asPath), ctl(asQuery), JSON.stringify(s));
    return ctl(asPath);
  };
  for (const s of ['http://foo.com/?foo\nbar', 'http\r://foo.com/', 'http://foo\x7f.com/']) {
    assert.equal(rejected(s), true, JSON.stringify(s));
  }
  assert.equal(rejected('http://foo.com/ctl\x80'), false);
  assert.equal(rejected('/api/v1/\x00'), true);
  assert.equal(rejected('/api/v1/\x1f'), true);
  assert.equal(rejected(' ~'), false);
});
