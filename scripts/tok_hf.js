// tok_hf.js — the Hugging Face side of the tokenizer differential test and benchmark (npm `tokenizers`,
// installed by the calling scripts into ./node_modules, which git ignores).
//   node scripts/tok_hf.js gen N SEED            random mixed-script texts, one JSON string per line
//   node scripts/tok_hf.js encode TOKENIZER FILE  ids of each JSON-string line, " id id ..." per line
//   node scripts/tok_hf.js bench TOKENIZER FILE   load time and one-thread encode throughput of FILE
'use strict';
const fs = require('fs');
const path = require('path');

function loadHF() {
  for (const p of [path.join(process.cwd(), 'node_modules', 'tokenizers'), 'tokenizers']) {
    try { return require(p); } catch (e) { /* next */ }
  }
  console.error('tok_hf.js: npm package "tokenizers" not found (npm install --no-save tokenizers@0.23.2)');
  process.exit(2);
}

function rng(seed) { // mulberry32
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6D2B79F5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const pieces = [
  'Hello', ' world', 'The', ' quick', ' brown', ' fox', "'s", "'ll", ' don\'t', ' I\'M', 'tokenization', ' naïve',
  ' Äpfel', ' Cửa Việt', ' façade', ' Straße', ' нещо', ' на', ' Български', ' Ελληνικά', ' ΐ', ' Ω', ' K', ' ﬁ',
  '我想在', 'apple', '工作', '你好，世界！', '日本語の', 'カタカナ', 'ひらがな', '한국어', ' 안녕하세요', 'العربية', ' مرحبا',
  'हिन्दी', ' नमस्ते', 'ภาษาไทย', 'ខ្មែរ', 'ქართული', 'Հայերեն', '🦙', '😀', '🚀', '😶‍🌫️', '👍🏽', '👨‍👩‍👧‍👦', '🇫🇷', '✅',
  ' ', '  ', '   ', '\t', '\n', '\n\n', '\r\n', ' \n ', '\u00a0', '\u3000', '\u180e', '\u2028', '\u2009', '\u200b',
  '0', '12', '123', '1234567', '3.14159', '٣٤٥', '１２３', '²', 'Ⅻ', '½',
  '!', '!!!', '?', '...', '—', '–', '«', '»', '“', '”', '‘', '’', '(', ')', '[', ']', '{', '}', '<', '>', '=',
  '==', '->', '=>', '::', '#', '$', '%', '^', '&', '*', '_', '`', '~', '|', '\\', '/', '@', '+', '-', '€', '¥',
  'def f(x):\n    return x ** 2\n', 'int main(void) { return 0; }', '  if (a && b) {\n\t\tfoo();\n  }',
  '<html><body>', '</div>', 'https://example.com/a?b=c&d=e', 'user@example.org', 'x_1', 'camelCase', 'snake_case',
  '<｜User｜>', '<｜Assistant｜>', '<｜begin▁of▁sentence｜>', '<｜end▁of▁sentence｜>', '<|EOT|>', '<｜fim▁hole｜>',
  '<｜tool▁sep｜>', ' <｜User｜> ', 'ø', 'ö', 'ú', 'À', '<pad>', '<|User|>', '[PAD32022]',
  'é', 'e\u0301', 'n\u0303', 'a\u0308\u0308', '\u0301', 'ǅ', 'ß', 'İ', 'ﬀ', 'Ａ', 'ａ', 'µ', 'ª', 'º',
];

function genText(r) {
  const n = 1 + Math.floor(r() * 24);
  let s = '';
  for (let i = 0; i < n; i++) {
    const k = r();
    if (k < 0.75) s += pieces[Math.floor(r() * pieces.length)];
    else if (k < 0.9) { // random BMP code point from a few interesting ranges
      const ranges = [[0x20, 0x7e], [0xa0, 0x24f], [0x370, 0x52f], [0x590, 0x6ff], [0x900, 0xdff], [0x1100, 0x11ff],
        [0x2000, 0x206f], [0x2100, 0x22ff], [0x3000, 0x30ff], [0x4e00, 0x9fff], [0xac00, 0xd7a3], [0xff00, 0xffef]];
      const [lo, hi] = ranges[Math.floor(r() * ranges.length)];
      s += String.fromCodePoint(lo + Math.floor(r() * (hi - lo + 1)));
    } else if (k < 0.95) { // astral
      const ranges = [[0x1f300, 0x1faff], [0x10400, 0x1044f], [0x1d400, 0x1d7ff], [0x20000, 0x2a6df], [0x1e900, 0x1e95f]];
      const [lo, hi] = ranges[Math.floor(r() * ranges.length)];
      s += String.fromCodePoint(lo + Math.floor(r() * (hi - lo + 1)));
    } else {
      s += ' '.repeat(1 + Math.floor(r() * 6));
    }
  }
  return s;
}

async function main() {
  const [cmd, a, b] = process.argv.slice(2);
  if (cmd === 'gen') {
    const r = rng(Number(b || 1));
    const out = [];
    for (let i = 0; i < Number(a); i++) out.push(JSON.stringify(genText(r)));
    process.stdout.write(out.join('\n') + '\n');
    return;
  }
  const { Tokenizer } = loadHF();
  const t0 = process.hrtime.bigint();
  const tok = Tokenizer.fromFile(a);
  const loadMs = Number(process.hrtime.bigint() - t0) / 1e6;
  if (cmd === 'encode') {
    const lines = fs.readFileSync(b, 'utf8').split('\n').filter((l) => l.length);
    const out = [];
    for (const l of lines) {
      const e = await tok.encode(JSON.parse(l), null, { addSpecialTokens: false });
      out.push(e.getIds().map((x) => ' ' + x).join(''));
    }
    process.stdout.write(out.join('\n') + '\n');
  } else if (cmd === 'bench') {
    const text = fs.readFileSync(b, 'utf8');
    const bytes = Buffer.byteLength(text, 'utf8');
    let best = Infinity, n = 0;
    for (let round = 0; round < 3; round++) {
      const s = process.hrtime.bigint();
      const e = await tok.encode(text, null, { addSpecialTokens: false });
      const d = Number(process.hrtime.bigint() - s) / 1e9;
      n = e.getIds().length;
      if (d < best) best = d;
    }
    const rss = process.memoryUsage().rss / 1048576;
    console.log(JSON.stringify({ bytes, tokens: n, load_ms: +loadMs.toFixed(1), encode_s: +best.toFixed(4),
      mb_per_s: +(bytes / 1e6 / best).toFixed(2), rss_mb: +rss.toFixed(1) }));
  } else {
    console.error('usage: tok_hf.js gen N SEED | encode TOKENIZER FILE | bench TOKENIZER FILE');
    process.exit(2);
  }
}
main().catch((e) => { console.error(String(e)); process.exit(1); });
