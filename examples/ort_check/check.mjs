// A check for `reprokit reduce --check` and `reprokit fuzz --check`: runs an ONNX model with ONNX
// Runtime (onnxruntime-node, CPU) on the candidate's inputs and judges ORT's outputs with
// `reprokit compare` (reprokit's accuracy rule against its float64 reference).
//
//   node examples/ort_check/check.mjs MODEL.onnx
//
// The inputs are MODEL's directory's inputs/<input name>.npy, as `reprokit reduce` and `reprokit
// fuzz` write each candidate. Exit status:
//   0  ORT's outputs pass; or ORT has no kernel for an op or type of the model ("ort_check:
//      unsupported: ..." — a limitation, not a bug)
//   1  they do not pass ("ort_check: MISMATCH"), or ORT fails to load or run the model with an
//      error that is not an unsupported op or type ("ort_check: FAILED")
//   3  the check cannot judge: bad invocation, missing or malformed inputs, onnxruntime-node not
//      installed, reprokit not found, or `reprokit compare` refusing its input
//
//   node examples/ort_check/check.mjs --run MODEL.onnx INPUTS_DIR OUTPUTS_DIR
//
// runs the model on INPUTS_DIR/<input name>.npy and writes output k as OUTPUTS_DIR/out<k>.npy,
// without judging them: reprokit's `onnxruntime` backend calls this. Exit 0: written; 1: ORT
// could not load or run the model, kernels it lacks included ("ort_check: FAILED: ONNX Runtime
// session creation: ..." or "... run: ..."); 3: bad invocation or input.
//
//   node examples/ort_check/check.mjs --time MODEL.onnx INPUTS_DIR ITERS THREADS
//
// times the model for bench_models: ITERS runs after 3 warm-up runs, ORT with THREADS intra-op
// threads and every graph optimisation; prints the median run in microseconds, then the kB the
// process's peak resident set rose above its resident set before the session was created.
//   node examples/ort_check/check.mjs --optimizers MODEL.onnx
//
// creates a session with ORT's verbose log and prints, one per line as "optimizer: NAME", each
// graph optimiser that changed the model, in the order they ran, then "failed in: NAME" when one
// threw; `reprokit bisect` asks this which optimisers to try turning off. Exit 0 whether or not the
// session could be created (its error is printed as "session: ...").
// Environment: REPROKIT_EXE (the reprokit binary; default: `reprokit` on PATH), ORT_CHECK_OPT_LEVEL
// (ORT's graph optimisation level: disabled, basic, extended, layout or all; default all),
// ORT_CHECK_DISABLED_OPTIMIZERS (a comma-separated list of ORT optimiser and rewrite-rule names to
// turn off, as ORT's session option optimization.disable_specified_optimizers takes them).
// ORT runs with one thread, so its results do not depend on the machine's core count.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const EXIT_PASS = 0, EXIT_FAIL = 1, EXIT_CANNOT_JUDGE = 3;

const USAGE = `usage: node check.mjs MODEL.onnx   (inputs in inputs/<input name>.npy beside MODEL)
       node check.mjs --run MODEL.onnx INPUTS_DIR OUTPUTS_DIR   (ORT's outputs as OUTPUTS_DIR/out<k>.npy)
       node check.mjs --optimizers MODEL.onnx   (the ORT optimisers that change MODEL)
       node check.mjs --version
exit 0: ONNX Runtime's outputs pass reprokit's accuracy rule, or ORT lacks a kernel ("unsupported");
exit 1: they do not, or ORT fails; exit 3: cannot judge. See examples/ort_check/README.md.`;

class CannotJudge extends Error {}  // exit 3
class Unsupported extends Error {}  // exit 0, "unsupported"

// The peak resident set of this process since it started, in kB: /proc/self/status's VmHWM.
// Not resourceUsage().maxRSS: the kernel carries the maxRSS of the process that started this one
// across exec (bench_models holding hundreds of MB of models made every model's peak look alike).
function peakResidentKb() {
  const line = fs.readFileSync('/proc/self/status', 'utf8').split('\n').find((l) => l.startsWith('VmHWM:'));
  return line ? Number(line.split(/\s+/)[1]) : NaN;
}

// Prints the verdict's line and sets the exit status; the process then ends by itself, once
// stdout and stderr are flushed.
function finish([code, line]) {
  (code === EXIT_PASS ? console.log : console.error)(line);
  process.exitCode = code;
}

// ---- .npy: little-endian, C order; the dtypes ORT and reprokit share ----------------------------

// descr (without its byte-order character) <-> ORT tensor type and typed array.
const NPY_TYPES = {
  f4: { ort: 'float32', array: Float32Array, size: 4 },
  f8: { ort: 'float64', array: Float64Array, size: 8 },
  f2: { ort: 'float16', array: Uint16Array, size: 2 },
  i8: { ort: 'int64', array: BigInt64Array, size: 8 },
  i4: { ort: 'int32', array: Int32Array, size: 4 },
  i2: { ort: 'int16', array: Int16Array, size: 2 },
  i1: { ort: 'int8', array: Int8Array, size: 1 },
  u1: { ort: 'uint8', array: Uint8Array, size: 1 },
  b1: { ort: 'bool', array: Uint8Array, size: 1 },
};
const NPY_OF_ORT = Object.fromEntries(Object.entries(NPY_TYPES).map(([d, t]) => [t.ort, d]));

// A value in the header dict: 'descr': '<f4', 'fortran_order': False, 'shape': (2, 3),
function headerField(header, key, where) {
  const m = header.match(new RegExp(`['"]${key}['"]\\s*:\\s*('[^']*'|"[^"]*"|True|False|\\([^)]*\\))`));
  if (!m) throw new CannotJudge(`${where}: malformed .npy header: no '${key}'`);
  return m[1];
}

function readNpy(file) {
  let bytes;
  try {
    bytes = fs.readFileSync(file);
  } catch (e) {
    throw new CannotJudge(`${file}: cannot read: ${e.code || e.message}`);
  }
  const bad = (why) => new CannotJudge(`${file}: not a .npy file this check reads: ${why}`);
  if (bytes.length < 10 || bytes.toString('latin1', 0, 6) !== '\x93NUMPY') throw bad('bad magic');
  const major = bytes[6];
  if (major < 1 || major > 3) throw bad(`format version ${major}`);
  const headerLength = major === 1 ? bytes.readUInt16LE(8) : bytes.length >= 12 ? bytes.readUInt32LE(8) : -1;
  const start = major === 1 ? 10 : 12;
  if (headerLength < 0 || start + headerLength > bytes.length) throw bad('truncated header');
  const header = bytes.toString('latin1', start, start + headerLength);
  const descr = headerField(header, 'descr', file).slice(1, -1);
  if (headerField(header, 'fortran_order', file) !== 'False') throw bad('Fortran order');
  const shapeText = headerField(header, 'shape', file).slice(1, -1).trim();
  const shape = shapeText === '' ? [] : shapeText.split(',').map((s) => s.trim()).filter((s) => s !== '').map((s) => {
    if (!/^\d{1,12}$/.test(s)) throw bad(`bad dimension '${s}'`);
    return Number(s);
  });
  const order = descr[0], code = descr.slice(1);
  const type = NPY_TYPES[code];
  const byteOrderOk = type && (type.size === 1 ? '|<='.includes(order) : order === '<' || (order === '=' && os.endianness() === 'LE'));
  if (!type || !byteOrderOk) {
    if (descr === '<u2') throw new Unsupported(`${file} holds bfloat16 (reprokit writes it as '<u2'), which onnxruntime-node cannot pass`);
    throw bad(`dtype '${descr}' (this check reads little-endian f4 f8 f2 i8 i4 i2 i1 u1 b1)`);
  }
  const count = shape.reduce((a, b) => a * b, 1);
  const dataStart = start + headerLength;
  if (!Number.isSafeInteger(count * type.size) || bytes.length - dataStart !== count * type.size)
    throw bad(`holds ${bytes.length - dataStart} data bytes, shape (${shape.join(', ')}) of ${code} needs ${count * type.size}`);
  // A copy: typed arrays need aligned offsets, and readFileSync's buffer may sit anywhere in a pool.
  const data = new type.array(new Uint8Array(bytes.subarray(dataStart)).buffer);
  return { ortType: type.ort, data, shape };
}

function npyBytes(descrCode, shape, data) {
  const order = NPY_TYPES[descrCode].size === 1 ? '|' : '<';
  const dims = shape.length === 1 ? `${shape[0]},` : shape.join(', ');
  let header = `{'descr': '${order}${descrCode}', 'fortran_order': False, 'shape': (${dims}), }`;
  header += ' '.repeat(63 - ((10 + header.length) % 64)) + '\n';  // data aligned to 64 bytes
  const prefix = Buffer.alloc(10);
  Buffer.from('\x93NUMPY', 'latin1').copy(prefix);
  prefix[6] = 1;
  prefix[7] = 0;
  prefix.writeUInt16LE(header.length, 8);
  return Buffer.concat([prefix, Buffer.from(header, 'latin1'), Buffer.from(data.buffer, data.byteOffset, data.byteLength)]);
}

// ---- names: files are named after the ONNX values, as `reprokit compare` reads them -------------

// reprokit's mapping of a foreign name (onnx_names.h: sanitize_foreign_name), for names that
// cannot be file names.
function sanitize(name) {
  const bytes = Buffer.from(name, 'utf8');
  const ok = (c) => (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || (c >= 0x30 && c <= 0x39) || c === 0x5f || c === 0x2e;
  const first = bytes.length ? bytes[0] : 0x30;
  const goodFirst = (first >= 0x61 && first <= 0x7a) || (first >= 0x41 && first <= 0x5a) || first === 0x5f || !ok(first);
  let out = goodFirst ? '' : 'v_';
  for (const c of bytes) out += ok(c) ? String.fromCharCode(c) : '_';
  return out.slice(0, 200);
}

function fileStem(name) {
  const usable = name !== '' && !name.includes('/') && !name.includes('\0') && Buffer.byteLength(name, 'utf8') <= 251;
  return usable ? name : sanitize(name);
}

// ---- ORT's errors: a missing kernel is a limitation, anything else a failure --------------------

// "Unsupported data type: 16": onnxruntime-node's own JavaScript layer has no type for a model
// input or output of that ONNX type (16: bfloat16). "MLFloat16 data type is not supported with
// ScatterElements opset 16 when reduction is 'add'": a kernel that refuses a type at run time.
const UNSUPPORTED = /NOT_IMPLEMENTED|Could not find an implementation|^Unsupported data type: \d+$|data type is not supported with/;

// --run: ORT's outputs are wanted, so a kernel it lacks ends the run (exit 1) but is still said
// to be "unsupported": the onnxruntime backend counts it a limitation, not a finding.
let runMode = false;

function ortError(stage, e) {
  // ANSI colour codes (ORT colours its log lines) would garble a bug report.
  let message = String((e && e.message) || e).replace(/\x1b\[[0-9;]*m/g, '').replace(/\s+/g, ' ').trim().slice(0, 4000);
  const unsupported = UNSUPPORTED.test(message);
  if (message === 'Unsupported data type: 16') message += ' (bfloat16, which onnxruntime-node cannot pass)';
  if (unsupported) return [runMode ? EXIT_FAIL : EXIT_PASS, `ort_check: unsupported: ${stage}: ${message}`];
  return [EXIT_FAIL, `ort_check: FAILED: ONNX Runtime ${stage}: ${message}`];
}

// "onnxruntime-node 1.30.0 (Node.js v18.19.0)": what a bug report names as the compiler.
async function versions() {
  let ort;
  try {
    ort = await import('onnxruntime-node');
  } catch (e) {
    throw new CannotJudge(`onnxruntime-node is not installed (cd examples/ort_check && npm install --ignore-scripts): ${e.message}`);
  }
  return `onnxruntime-node ${(ort.env.versions && ort.env.versions.node) || 'unknown'} (Node.js ${process.version})`;
}

// ---- which optimisers changed the model ----------------------------------------------------------

// ORT's verbose log names each graph transformer as it starts ("Applying graph transformer NAME")
// and whether it changed the graph ("GraphTransformer NAME modified: 1"). The log goes to this
// process's stderr from ORT's native code, so the session is created in a child whose stderr is
// read here.
async function listOptimizers(ort, model, sessionOptions) {
  if (process.env.ORT_CHECK_OPTIMIZERS_CHILD === '1') {
    ort.env.logLevel = 'verbose';
    try {
      await ort.InferenceSession.create(model, { ...sessionOptions, logSeverityLevel: 0, logVerbosityLevel: 0 });
      console.log('session: created');
    } catch (e) {
      console.log(`session: ${String((e && e.message) || e).replace(/\s+/g, ' ').trim().slice(0, 2000)}`);
    }
    return [EXIT_PASS, 'ort_check: optimizers listed'];
  }
  const r = spawnSync(process.execPath, [process.argv[1], '--optimizers', model], {
    encoding: 'utf8', maxBuffer: 256 << 20, env: { ...process.env, ORT_CHECK_OPTIMIZERS_CHILD: '1' },
  });
  if (r.error || r.status !== 0) throw new CannotJudge(`the optimiser listing failed: ${r.error ? r.error.message : (r.stderr || '').slice(-2000)}`);
  const changed = [], seen = new Set();
  let running = '';
  for (const line of r.stderr.split('\n')) {
    const started = line.match(/Applying graph transformer (\S+) on step/);
    if (started) running = started[1];
    const done = line.match(/GraphTransformer (\S+) modified: (\d+)/);
    if (done) {
      running = '';
      if (done[2] !== '0' && !seen.has(done[1])) { seen.add(done[1]); changed.push(done[1]); }
    }
  }
  for (const name of changed) console.log(`optimizer: ${name}`);
  const session = (r.stdout.split('\n').find((l) => l.startsWith('session: ')) || 'session: (no answer)');
  if (running && session !== 'session: created') console.log(`failed in: ${running}`);
  console.log(session);
  return [EXIT_PASS, 'ort_check: optimizers listed'];
}

// ---- the check --------------------------------------------------------------------------------

function typeStr(type, shape) {
  return `${type}[${shape.join(', ')}]`;
}

async function main(argv) {
  if (argv.length === 1 && (argv[0] === '--help' || argv[0] === '-h')) return [EXIT_PASS, USAGE];
  if (argv.length === 1 && argv[0] === '--version') return [EXIT_PASS, await versions()];
  runMode = argv.length === 4 && argv[0] === '--run';
  const timeMode = argv.length === 5 && argv[0] === '--time';
  const optimizersMode = argv.length === 2 && argv[0] === '--optimizers';
  if (runMode || timeMode || optimizersMode) argv = argv.slice(1);
  else if (argv.length !== 1 || argv[0].startsWith('-')) throw new CannotJudge(USAGE);
  const model = path.resolve(argv[0]);
  if (!model.endsWith('.onnx')) throw new CannotJudge(`${argv[0]}: expected an ONNX model (.onnx)`);
  if (!fs.existsSync(model)) throw new CannotJudge(`${argv[0]}: no such file`);
  if (os.endianness() !== 'LE') throw new CannotJudge('this check writes little-endian .npy files from memory: a little-endian machine is needed');
  const inputsDir = runMode || timeMode ? argv[1] : path.join(path.dirname(model), 'inputs');
  const iters = timeMode ? Number(argv[2]) : 0, threads = timeMode ? Number(argv[3]) : 1;
  if (timeMode && !(Number.isInteger(iters) && iters > 0 && Number.isInteger(threads) && threads > 0))
    throw new CannotJudge(`--time: ITERS and THREADS must be positive integers, got '${argv[2]}' and '${argv[3]}'`);

  // ONNX Runtime leaves an empty mat-debug-<pid>.log in $TMPDIR (or /tmp) on every run: give it
  // a directory of its own, removed when this process exits.
  const ortTmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ort_check-tmp-'));
  process.env.TMPDIR = ortTmp;
  process.on('exit', () => fs.rmSync(ortTmp, { recursive: true, force: true }));
  let ort;
  try {
    ort = await import('onnxruntime-node');
  } catch (e) {
    throw new CannotJudge(`onnxruntime-node is not installed (cd examples/ort_check && npm install --ignore-scripts): ${e.message}`);
  }
  const levels = ['disabled', 'basic', 'extended', 'layout', 'all'];
  const level = process.env.ORT_CHECK_OPT_LEVEL || 'all';
  if (!levels.includes(level)) throw new CannotJudge(`ORT_CHECK_OPT_LEVEL=${level}: expected one of ${levels.join(', ')}`);

  const disabled = process.env.ORT_CHECK_DISABLED_OPTIMIZERS || '';
  if (!/^[A-Za-z0-9_]*(,[A-Za-z0-9_]+)*$/.test(disabled))
    throw new CannotJudge(`ORT_CHECK_DISABLED_OPTIMIZERS=${disabled}: expected comma-separated optimiser names`);
  const sessionOptions = {
    executionProviders: ['cpu'],
    graphOptimizationLevel: level,
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
  };
  // ORT's config value separates names with ';' (a ',' would make one unknown name of them all).
  if (disabled !== '') sessionOptions.extra = { optimization: { disable_specified_optimizers: disabled.split(',').join(';') } };
  if (optimizersMode) return listOptimizers(ort, model, sessionOptions);

  let session;
  const rssBeforeKb = process.memoryUsage().rss / 1024;
  try {
    session = await ort.InferenceSession.create(model, sessionOptions);
  } catch (e) {
    return ortError('session creation', e);
  }

  // Feeds: inputs/<input name>.npy of the type and shape the model declares. Inputs with dynamic
  // dimensions get their sizes from the files, for compare too (--shape).
  const feeds = {};
  const shapeFlags = [];
  for (let i = 0; i < session.inputNames.length; ++i) {
    const name = session.inputNames[i];
    const meta = session.inputMetadata ? session.inputMetadata[i] : undefined;
    let file = path.join(inputsDir, fileStem(name) + '.npy');
    if (!fs.existsSync(file) && fs.existsSync(path.join(inputsDir, sanitize(name) + '.npy'))) file = path.join(inputsDir, sanitize(name) + '.npy');
    if (!fs.existsSync(file)) throw new CannotJudge(`input '${name}': ${file} is missing`);
    const t = readNpy(file);
    if (meta && meta.isTensor) {
      if (meta.type !== t.ortType) throw new CannotJudge(`${file}: holds ${typeStr(t.ortType, t.shape)}, the model's input '${name}' is ${typeStr(meta.type, meta.shape)}`);
      const fits = meta.shape.length === t.shape.length && meta.shape.every((d, k) => typeof d !== 'number' || d < 0 || d === t.shape[k]);
      if (!fits) throw new CannotJudge(`${file}: holds ${typeStr(t.ortType, t.shape)}, the model's input '${name}' is ${typeStr(meta.type, meta.shape)}`);
    }
    if (meta && meta.isTensor && meta.shape.some((d) => typeof d !== 'number')) shapeFlags.push('--shape', `${name}:[${t.shape.join(',')}]`);
    feeds[name] = new ort.Tensor(t.ortType, t.data, t.shape);
  }

  let results;
  try {
    results = await session.run(feeds);
    if (timeMode) {
      for (let k = 0; k < 3; ++k) await session.run(feeds);
      const runs = [];
      for (let k = 0; k < iters; ++k) {
        const t0 = process.hrtime.bigint();
        await session.run(feeds);
        runs.push(Number(process.hrtime.bigint() - t0) / 1e3);
      }
      runs.sort((a, b) => a - b);
      const peakKb = peakResidentKb() - rssBeforeKb;
      return [EXIT_PASS, `${runs[Math.floor(runs.length / 2)].toFixed(1)} ${peakKb.toFixed(0)}`];
    }
  } catch (e) {
    return ortError('run', e);
  }
  if (runMode) {
    session.outputNames.forEach((name, k) => {
      const t = results[name];
      const code = t && NPY_OF_ORT[t.type];
      if (!code) throw new CannotJudge(`output '${name}' has ORT type ${t ? t.type : 'none'}, which cannot be written as .npy`);
      fs.writeFileSync(path.join(argv[2], `out${k}.npy`), npyBytes(code, t.dims, t.data), { flag: 'wx' });
    });
    return [EXIT_PASS, `ort_check: ran: ${session.outputNames.length} output(s) written to ${argv[2]}`];
  }

  const outDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ort_check-'));
  try {
    const written = new Map();  // file -> output name
    for (let k = 0; k < session.outputNames.length; ++k) {
      const name = session.outputNames[k];
      const t = results[name];
      const code = t && NPY_OF_ORT[t.type];
      if (!code) throw new Unsupported(`output '${name}' has ORT type ${t ? t.type : 'none'}, which this check cannot write as .npy`);
      // ORT's output against the type and shape the model declares (ONNX shape inference checked
      // them when reprokit exported it): a difference is ORT's, not bad input.
      const meta = session.outputMetadata ? session.outputMetadata[k] : undefined;
      if (meta && meta.isTensor) {
        const fits = meta.type === t.type && meta.shape.length === t.dims.length && meta.shape.every((d, j) => typeof d !== 'number' || d < 0 || d === t.dims[j]);
        if (!fits) return [EXIT_FAIL, `ort_check: MISMATCH: output '${name}' is ${typeStr(t.type, t.dims)}, the model declares ${typeStr(meta.type, meta.shape)}`];
      }
      const file = fileStem(name) + '.npy';
      if (written.has(file)) throw new CannotJudge(`outputs '${written.get(file)}' and '${name}' would both be ${file}`);
      written.set(file, name);
      fs.writeFileSync(path.join(outDir, file), npyBytes(code, t.dims, t.data), { flag: 'wx' });
    }
    const exe = process.env.REPROKIT_EXE || 'reprokit';
    const args = ['compare', model, '--outputs', outDir];
    if (fs.existsSync(inputsDir)) args.push('--inputs', inputsDir);
    args.push(...shapeFlags);
    const r = spawnSync(exe, args, { encoding: 'utf8', maxBuffer: 64 << 20 });
    if (r.error) throw new CannotJudge(`cannot run ${exe} (set REPROKIT_EXE to the reprokit binary): ${r.error.message}`);
    process.stdout.write(r.stdout);
    process.stderr.write(r.stderr);
    if (r.status === 0) return [EXIT_PASS, `ort_check: PASS: ${session.outputNames.length} output(s) of ${path.basename(model)} agree with reprokit's float64 reference`];
    if (r.status === 1) {
      // What failed, on the verdict line itself: a bug report (and triage's grouping) reads this line.
      const verdict = (r.stdout.split('\n').find((l) => l.startsWith('reprokit compare: MISMATCH')) || '').replace(/^reprokit compare: MISMATCH[^:]*:\s*/, '');
      return [EXIT_FAIL, `ort_check: MISMATCH: ONNX Runtime's outputs fail reprokit's accuracy rule: ${verdict || '(see above)'}`];
    }
    const how = r.status === null ? `was killed by ${r.signal}` : `exited ${r.status}`;
    return [EXIT_CANNOT_JUDGE, `ort_check: cannot judge: reprokit compare ${how} (above)`];
  } finally {
    fs.rmSync(outDir, { recursive: true, force: true });
  }
}

try {
  finish(await main(process.argv.slice(2)));
} catch (e) {
  if (e instanceof Unsupported) finish([runMode ? EXIT_FAIL : EXIT_PASS, `ort_check: unsupported: ${e.message}`]);
  else if (e instanceof CannotJudge) finish([EXIT_CANNOT_JUDGE, `ort_check: cannot judge: ${e.message}`]);
  else finish([EXIT_CANNOT_JUDGE, `ort_check: internal error: ${(e && e.stack) || e}`]);
}
