// validate.js < DOCS.json: each Kubernetes object of the JSON array on
// stdin checked against the API schema of kubernetes-models (its apiVersion
// and kind's model), offline.  Prints one line per invalid or unknown
// object, exits 1 if there was one.
'use strict';
const fs = require('fs');

const docs = JSON.parse(fs.readFileSync(0, 'utf8'));
let bad = 0;
for (const doc of docs) {
  const name = `${doc.kind}/${(doc.metadata || {}).name}`;
  const [group, version] = doc.apiVersion.includes('/') ? doc.apiVersion.split('/') : [null, doc.apiVersion];
  let Model;
  try {
    Model = require(`kubernetes-models/${group ? `${group}/` : ''}${version}/${doc.kind}`)[doc.kind];
  } catch (e) {
    console.log(`${name}: no schema for ${doc.apiVersion} ${doc.kind}`);
    bad++;
    continue;
  }
  try {
    new Model(doc).validate();
  } catch (e) {
    console.log(`${name}: ${e.message}`);
    bad++;
  }
}
console.log(`${docs.length} objects checked against the Kubernetes API schema, ${bad} invalid`);
process.exit(bad ? 1 : 0);
