// Skills (SEP-2640) seen from the TypeScript SDK's v2 client and its
// `SkillsClient`, which checks every file it reads against the listing: its
// size and SHA-256 digest, and a SKILL.md's frontmatter against the entry's.
// The host's copy, hashed when the component was loaded, must pass the
// client's own verification, on 2026-07-28 and on 2025-11-25.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { Client } from '@modelcontextprotocol/client';
import { SkillsClient } from '@modelcontextprotocol/client/ext/skills';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

import { guest, hostBinary } from './helpers.mjs';

const SKILL = 'skill://release-notes/SKILL.md';

/** A v2 client pinned to `version` on a host serving `everything`. */
async function connect(version) {
  const transport = new StdioClientTransport({
    command: hostBinary,
    args: ['--component', guest('everything')],
    env: { ...process.env, RUST_LOG: 'warn', NO_COLOR: '1' },
    stderr: 'pipe',
  });
  const client = new Client(
    { name: 'skills-test', version: '1.0.0' },
    {
      capabilities: {},
      // A 2025-era session is `legacy` (`initialize`); 2026-07-28 is pinned.
      versionNegotiation: { mode: version === '2026-07-28' ? { pin: version } : 'legacy' },
    },
  );
  await client.connect(transport);
  return client;
}

for (const version of ['2026-07-28', '2025-11-25']) {
  test(`a component's skill is listed, fetched, walked and verified by the client (${version})`, async () => {
    const client = await connect(version);
    try {
      assert.equal(client.getNegotiatedProtocolVersion(), version);
      const skills = new SkillsClient(client);
      assert.ok(skills.supported && skills.directoryRead, 'the extension, with directoryRead');

      const listing = await skills.list();
      assert.deepEqual(listing.invalid, []);
      assert.deepEqual(listing.skills.map((skill) => skill.uri), [SKILL]);
      const [skill] = listing.skills;
      assert.equal(skill.frontmatter.name, 'release-notes');
      assert.deepEqual(skill.frontmatter.metadata, { audience: 'maintainers' });
      if (version === '2026-07-28') assert.equal(typeof listing.ttlMs, 'number');

      const { skill: got } = await skills.get(SKILL);
      assert.deepEqual(got, skill);

      // Size, digest and (for SKILL.md) frontmatter checked by the client.
      const manifest = await skills.read(skill);
      assert.equal(manifest.verified, true);
      assert.equal(manifest.mimeType, 'text/markdown');
      assert.match(manifest.body, /# Release notes/);
      const style = await skills.read(skill, 'references/STYLE.md');
      assert.equal(style.verified, true);
      assert.match(style.text, /Start each line with a verb/);

      const root = await skills.readDirectory('skill://release-notes');
      assert.deepEqual(
        root.resources.map((child) => [child.uri, child.mimeType]),
        [
          [SKILL, 'text/markdown'],
          ['skill://release-notes/references', 'inode/directory'],
        ],
      );
      await assert.rejects(skills.get('skill://nothing/SKILL.md'), (error) => error.code === -32602);
    } finally {
      await client.close();
    }
  });
}
