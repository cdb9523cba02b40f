#!/usr/bin/env node
// SPDX-License-Identifier: MIT
//
// Validate rdmactl's -j documents against schemas/ (JSON Schema draft-07)
// with ajv (Debian's node-ajv: NODE_PATH=/usr/share/nodejs).
//
//   schema-check.js [--schemas DIR] --command NAME [FILE|-]
//     FILE (or stdin): one document, or one document a line (an event
//     stream), as command NAME printed it ("kvxfer plan", "batch" for -b).
//   schema-check.js [--schemas DIR] [--min N] --log DIR...
//     every record that rdmactl wrote under DIR (RDMACTL_TEST_JSON_LOG,
//     cmds/framework/output.c: one line {"command", "argv", "document"}
//     each, in files *.jsonl, at any depth); --min N fails when fewer than
//     N documents were found.
//
// Which schema: a document with "error" is error.schema.json's, one with
// "event" events.schema.json's, one that holds only "command" (help
// COMMAND, COMMAND --help) help.schema.json's; any other is its command's,
// schemas/NAME.schema.json with a blank as "-" (kvxfer-plan.schema.json).
// A batch (-b) is an array whose entries' outputs are checked the same way,
// by the command of each entry.
//
// Prints "schema-check: N documents valid (C commands: ...)"; or, for each
// invalid one, the command line, the schema file, the failing path and
// why, and exits 1. Exit 2: bad usage, a schema that does not compile.
'use strict';

const fs = require('fs');
const path = require('path');
let Ajv;
try {
	Ajv = require('ajv');
} catch (e) {
	process.stderr.write('schema-check: cannot load ajv (Debian: node-ajv; NODE_PATH=/usr/share/nodejs)\n');
	process.exit(2);
}

function usage(msg) {
	if (msg)
		process.stderr.write(`schema-check: ${msg}\n`);
	process.stderr.write('usage: schema-check.js [--schemas DIR] --command NAME [FILE|-]\n' +
		'       schema-check.js [--schemas DIR] [--min N] --log DIR...\n');
	process.exit(2);
}

let schemaDir = path.join(__dirname, '..', '..', 'schemas');
let command = null, logs = null, min = 0, file = null;
const args = process.argv.slice(2);
for (let i = 0; i < args.length; i++) {
	const a = args[i];
	const val = () => (i + 1 < args.length ? args[++i] : usage(`${a} needs an argument`));
	if (a === '--schemas') schemaDir = val();
	else if (a === '--command') command = val();
	else if (a === '--min') min = Number(val());
	else if (a === '--log') logs = args.slice(i + 1), i = args.length;
	else if (file === null && !a.startsWith('--')) file = a;
	else usage(`unexpected argument '${a}'`);
}
if ((command === null) === (logs === null) || (logs && (!logs.length || file !== null)))
	usage();
if (!Number.isInteger(min) || min < 0)
	usage('--min wants a count');

// Every schema of the folder, referable by its $id and its file name.
const ajv = new Ajv({ allErrors: true, jsonPointers: true });
const byFile = {};
let names;
try {
	names = fs.readdirSync(schemaDir).filter((f) => f.endsWith('.schema.json'));
} catch (e) {
	usage(`cannot read the schemas in ${schemaDir}: ${e.message}`);
}
for (const f of names) {
	let s;
	try {
		s = JSON.parse(fs.readFileSync(path.join(schemaDir, f), 'utf8'));
	} catch (e) {
		process.stderr.write(`schema-check: ${f}: ${e.message}\n`);
		process.exit(2);
	}
	ajv.addSchema(s);
	byFile[f] = s.$id;
}
const compiled = {};
function validator(f) {
	if (!(f in compiled)) {
		try {
			compiled[f] = byFile[f] ? ajv.getSchema(byFile[f]) : null;
		} catch (e) {
			process.stderr.write(`schema-check: ${f} does not compile: ${e.message}\n`);
			process.exit(2);
		}
	}
	return compiled[f];
}

// The commands whose documents are events: their own schema names which.
const streams = ['register', 'kvxfer serve', 'kvxfer send'];
const aliases = { serve: 'register', topo: 'probe-topology' };

// The command path of a batch entry's words: "kvxfer plan" from
// ["kvxfer", "--layers", "4", "plan"] (its first word that is a sub-command).
function entryCommand(words) {
	if (!Array.isArray(words) || typeof words[0] !== 'string')
		return null;
	const name = aliases[words[0]] || words[0];
	if (name === 'kvxfer') {
		const sub = words.slice(1).find((w) => ['plan', 'serve', 'send'].includes(w));
		return sub ? `kvxfer ${sub}` : name;
	}
	return name;
}

function schemaFile(cmd, doc) {
	const isObj = doc !== null && typeof doc === 'object' && !Array.isArray(doc);
	if (cmd === 'batch' && Array.isArray(doc)) return 'batch.schema.json';
	if (isObj && 'error' in doc) return 'error.schema.json';
	if (isObj && 'event' in doc) return streams.includes(cmd) ? `${cmd.replace(/ /g, '-')}.schema.json` : 'events.schema.json';
	if (isObj && 'command' in doc && Object.keys(doc).every((k) => k === 'command' || k === 'schema_version'))
		return 'help.schema.json';
	if (!cmd) return null;
	return `${cmd.replace(/ /g, '-')}.schema.json`;
}

// Problems of one document, [] when it is valid: {schema, where, why}.
function check(cmd, doc, where = '') {
	const f = schemaFile(cmd, doc);
	if (!f)
		return [{ schema: '-', where: where || '/', why: 'no command named: cannot choose a schema' }];
	const v = validator(f);
	if (!v)
		return [{ schema: path.join(schemaDir, f), where: where || '/', why: `no schema ${f} for command '${cmd}'` }];
	const bad = [];
	if (!v(doc)) {
		// the deepest complaints say most; oneOf's own line repeats them
		for (const e of v.errors) {
			if (e.keyword === 'oneOf' || e.keyword === 'if' || e.keyword === 'allOf') continue;
			let why = `${e.message}`;
			if (e.keyword === 'additionalProperties') why += ` '${e.params.additionalProperty}'`;
			else if (e.keyword === 'enum') why += ` (${e.params.allowedValues.join(', ')})`;
			else if (e.keyword === 'const') why += ` (${JSON.stringify(e.params.allowedValue)})`;
			bad.push({ schema: path.join(schemaDir, f), where: `${where}${e.dataPath}` || '/', why: `${why} [${e.schemaPath}]` });
		}
		if (!bad.length)
			bad.push({ schema: path.join(schemaDir, f), where: where || '/', why: ajv.errorsText(v.errors) });
		// a schema reached twice (through allOf and $ref) says it twice
		return bad.filter((b, i) => bad.findIndex((c) => c.where === b.where && c.why === b.why) === i);
	}
	if (f === 'batch.schema.json') {
		doc.forEach((entry, i) => {
			const sub = entryCommand(entry.command);
			const outs = Array.isArray(entry.output) ? entry.output : entry.output === null ? [] : [entry.output];
			outs.forEach((o, k) => {
				const at = `${where}/${i}/output${Array.isArray(entry.output) ? `/${k}` : ''}`;
				bad.push(...check(sub, o, at));
			});
		});
	}
	return bad;
}

let total = 0, failed = 0;
const seen = {};
function report(cmd, argv, doc, origin) {
	total++;
	const key = schemaFile(cmd, doc) || '?';
	seen[key.replace(/\.schema\.json$/, '')] = (seen[key.replace(/\.schema\.json$/, '')] || 0) + 1;
	const bad = check(cmd, doc);
	if (!bad.length)
		return;
	failed++;
	const line = argv ? argv.map((w) => (/^[\w@%+=:,./-]+$/.test(w) ? w : `'${w}'`)).join(' ') : `(${cmd})`;
	process.stdout.write(`not valid: ${line}\n  from ${origin}\n`);
	for (const b of bad)
		process.stdout.write(`  schema ${b.schema}: at ${b.where}: ${b.why}\n`);
	process.stdout.write(`  document: ${JSON.stringify(doc).slice(0, 2000)}\n`);
}

function jsonlFiles(dir) {
	let out = [];
	let ents;
	try {
		ents = fs.readdirSync(dir, { withFileTypes: true });
	} catch (e) {
		usage(`cannot read ${dir}: ${e.message}`);
	}
	for (const e of ents) {
		const p = path.join(dir, e.name);
		if (e.isDirectory()) out = out.concat(jsonlFiles(p));
		else if (e.name.endsWith('.jsonl')) out.push(p);
	}
	return out.sort();
}

function parse(text, origin) {
	try {
		return { doc: JSON.parse(text) };
	} catch (e) {
		total++;
		failed++;
		process.stdout.write(`not valid: ${origin}: not JSON: ${e.message}\n  text: ${text.slice(0, 500)}\n`);
		return null;
	}
}

if (logs) {
	for (const d of logs)
		for (const f of jsonlFiles(d)) {
			const lines = fs.readFileSync(f, 'utf8').split('\n');
			lines.forEach((l, n) => {
				if (!l) return;
				const r = parse(l, `${f}:${n + 1}`);
				if (!r) return;
				const rec = r.doc;
				report(rec.command, rec.argv, rec.document, `${f}:${n + 1}`);
			});
		}
} else {
	const text = fs.readFileSync(file === null || file === '-' ? 0 : file, 'utf8');
	const origin = file === null || file === '-' ? 'stdin' : file;
	// One document (pretty-printed or not), else one a line.
	let whole = null;
	try {
		whole = JSON.parse(text);
	} catch (e) {
		whole = undefined;
	}
	if (whole !== undefined) {
		report(command, null, whole, origin);
	} else {
		text.split('\n').forEach((l, n) => {
			if (!l.trim()) return;
			const r = parse(l, `${origin}:${n + 1}`);
			if (r) report(command, null, r.doc, `${origin}:${n + 1}`);
		});
	}
}

const kinds = Object.keys(seen).sort().map((k) => `${k} ${seen[k]}`).join(', ');
if (failed) {
	process.stdout.write(`schema-check: ${failed} of ${total} documents not valid\n`);
	process.exit(1);
}
if (total < min) {
	process.stdout.write(`schema-check: only ${total} documents (fewer than --min ${min})\n`);
	process.exit(1);
}
process.stdout.write(`schema-check: ${total} documents valid (${Object.keys(seen).length} schemas: ${kinds})\n`);
