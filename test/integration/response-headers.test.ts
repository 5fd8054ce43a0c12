// Response heads as a client reads them, on both front ends: exactly one Date header (the uWS build
// writes its own on every response, and used to add it next to the apiserver's), on proxied
// responses of both routes, on watches, on discovery mvproxy answers itself and on its own Status
// errors. Read from the raw bytes: undici would merge duplicates.
import { describe, test, before, after } from 'node:test';
import { FRONTENDS } from '../support/frontends';
import assert from 'node:assert/strict';
import { twoVersionPlane, AUTH, OLD } from '../support/plane';
import { sendRaw } from '../support/lenient-upstream';
import type { Plane } from '../../src/demo/topology';

const AGG = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';

for (const frontend of FRONTENDS) {
  describe(`response heads on the ${frontend} front end`, () => {
    let plane: Plane & { tmp: string };
    before(async () => {
      plane = await twoVersionPlane(frontend);
    });
    after(async () => {
      await plane?.close();
    });

    const cases: [string, string, number][] = [
      ['a local GET', 'GET /api/v1/namespaces/default/configmaps HTTP/1.1\r\n', 200],
      ['a peer-routed GET', 'GET /apis/scheduling.k8s.io/v1beta1/namespaces/default/workloads HTTP/1.1\r\n', 200],
      ['a local 404 from the apiserver', 'GET /api/v1/namespaces/default/configmaps/nope HTTP/1.1\r\n', 404],
      ['a HEAD', 'HEAD /api/v1/namespaces/default/configmaps HTTP/1.1\r\n', 200],
      ['peer-aggregated /apis from the snapshot', `GET /apis HTTP/1.1\r\nAccept: ${AGG}\r\n`, 200],
      ['a watch', 'GET /api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=1 HTTP/1.1\r\n', 200],
      ["mvproxy's own Status (417)", 'GET /api/v1/namespaces/default/configmaps HTTP/1.1\r\nExpect: foo\r\n', 417],
    ];
    for (const [what, head, status] of cases) {
      test(`${what}: one Date header`, async () => {
        const r = await sendRaw(Number(new URL(plane.member(OLD).url).port), `${head}Host: x\r\nAuthorization: ${AUTH.authorization}\r\nConnection: close\r\n\r\n`, { waitMs: 3000 });
        assert.equal(r.status, status, r.out.slice(0, 400));
        const headEnd = r.out.indexOf('\r\n\r\n');
        const dates = r.out.slice(0, headEnd).split('\r\n').filter((l) => /^date:/i.test(l));
        assert.equal(dates.length, 1, r.out.slice(0, headEnd));
        assert.ok(!Number.isNaN(Date.parse(dates[0].slice(5).trim())), dates[0]);
      });
    }
  });
}
