// tok_hf.js — the Hugging Face side of the tokenizer differential test and benchmark (npm `tokenizers`,
// installed by the calling scripts into ./node_modules, which git ignores).
//   node scripts/tok_hf.js gen N SEED            random mixed-script texts, one JSON string per line
//   node scripts/tok_hf.js genbench N SEED       N texts from the fixed pieces only, concatenated (bench text)
//   node scripts/tok_hf.js encode TOKENIZER FILE  ids of each JSON-string line, " id id ..." per line
//                                                 (TOKENIZER may be a .gguf: converted to tokenizer.json first)
//   node scripts/tok_hf.js bench TOKENIZER FILE   load time and one-thread encode throughput of FILE
//   node scripts/tok_hf.js chat CONFIG N SEED DIR N random conversations rendered by @huggingface/jinja with
//                                                 the tokenizer_config.json template: DIR/chat_convs.jsonl, chat_hf.jsonl
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
  '<｜tool▁sep｜>', ' <｜User｜> ', '<think>', '</think>', '</think>\n\n', 'ø', 'ö', 'ú', 'À', '<pad>', '<|User|>', '[PAD32022]',
  'é', 'e\u0301', 'n\u0303', 'a\u0308\u0308', '\u0301', 'ǅ', 'ß', 'İ', 'ﬀ', 'Ａ', 'ａ', 'µ', 'ª', 'º',
];

function genText(r, stable) {
  const n = 1 + Math.floor(r() * 24);
  let s = '';
  for (let i = 0; i < n; i++) {
    const k = stable ? 0 : r();
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

// GGUF vocabulary -> tokenizer.json for HF, so the GGUF vocabularies can be compared too. The
// pre-tokenizer splits are the same patterns src/tokenizer/tok_gguf.c uses (Oniguruma reads \x{...}
// as PCRE2 does), so this checks the engine (PCRE2 vs Oniguruma, added tokens, BPE), not the patterns,
// which the HF-made test vectors check.
const DS_LLM_LETTERS = 'A-Za-z\\x{B5}\\x{C0}-\\x{D6}\\x{D8}-\\x{F6}\\x{F8}-\\x{1BA}\\x{1BC}-\\x{1BF}\\x{1C4}-\\x{293}' +
  '\\x{295}-\\x{2AF}\\x{370}-\\x{373}\\x{376}\\x{377}\\x{37B}-\\x{37D}\\x{37F}\\x{386}\\x{388}-\\x{38A}' +
  '\\x{38C}\\x{38E}-\\x{3A1}\\x{3A3}-\\x{3F5}\\x{3F7}-\\x{481}\\x{48A}-\\x{52F}\\x{531}-\\x{556}' +
  '\\x{10A0}-\\x{10C5}\\x{13A0}-\\x{13F5}\\x{13F8}-\\x{13FD}\\x{1C90}-\\x{1CBA}\\x{1CBD}-\\x{1CBF}' +
  '\\x{1D00}-\\x{1D2B}\\x{1D6B}-\\x{1D77}\\x{1D79}-\\x{1D9A}\\x{1E00}-\\x{1F15}\\x{1F18}-\\x{1F1D}' +
  '\\x{1F20}-\\x{1F45}\\x{1F48}-\\x{1F4D}\\x{1F50}-\\x{1F57}\\x{1F59}\\x{1F5B}\\x{1F5D}\\x{1F5F}-\\x{1F7D}' +
  '\\x{1F80}-\\x{1FB4}\\x{1FB6}-\\x{1FBC}\\x{1FBE}\\x{1FC2}-\\x{1FC4}\\x{1FC6}-\\x{1FCC}\\x{1FD0}-\\x{1FD3}' +
  '\\x{1FD6}-\\x{1FDB}\\x{1FE0}-\\x{1FEC}\\x{1FF2}-\\x{1FF4}\\x{1FF6}-\\x{1FFC}\\x{2102}\\x{2107}' +
  '\\x{210A}-\\x{2113}\\x{2115}\\x{2119}-\\x{211D}\\x{2124}\\x{2126}\\x{2128}\\x{212A}-\\x{212D}' +
  '\\x{212F}-\\x{2134}\\x{2139}\\x{213C}-\\x{213F}\\x{2145}-\\x{2149}\\x{214E}\\x{2183}\\x{2184}' +
  '\\x{2C00}-\\x{2C7B}\\x{2C7E}-\\x{2CE4}\\x{2CEB}-\\x{2CEE}\\x{2CF2}\\x{2CF3}\\x{A640}-\\x{A66D}' +
  '\\x{A680}-\\x{A69B}\\x{A722}-\\x{A76F}\\x{A771}-\\x{A787}\\x{A78B}-\\x{A78E}\\x{AB70}-\\x{ABBF}' +
  '\\x{FB00}-\\x{FB06}\\x{FB13}-\\x{FB17}\\x{FF21}-\\x{FF3A}\\x{FF41}-\\x{FF5A}\\x{10400}-\\x{1044F}' +
  '\\x{104B0}-\\x{104D3}\\x{104D8}-\\x{104FB}\\x{10C80}-\\x{10CB2}\\x{10CC0}-\\x{10CF2}\\x{118A0}-\\x{118DF}' +
  '\\x{1E900}-\\x{1E943}';
const DS_CJK = '[\\x{4E00}-\\x{9FA5}\\x{0800}-\\x{4E00}\\x{AC00}-\\x{D7FF}]+';
const PRE = {
  'deepseek-llm': ['[\\r\\n]', '\\s?[' + DS_LLM_LETTERS + ']+',
    '\\s?[!-/:-~\\x{FF01}-\\x{FF0F}\\x{FF1A}-\\x{FF5E}\\x{2018}-\\x{201F}\\x{3000}-\\x{3002}]+', '\\s+$', DS_CJK, '\\p{N}+'],
  'deepseek-coder': ['[\\r\\n]', '\\s?\\p{L}+', '\\s?\\p{P}+', DS_CJK, '\\p{N}'],
};

function gguf2json(file) {
  const b = fs.readFileSync(file);
  let o = 4;
  const u32 = () => { const v = b.readUInt32LE(o); o += 4; return v; };
  const u64 = () => { const v = Number(b.readBigUInt64LE(o)); o += 8; return v; };
  const str = () => { const n = u64(); const s = b.toString('utf8', o, o + n); o += n; return s; };
  const size = [1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8];
  const val = (t) => {
    if (t === 8) return str();
    if (t === 9) { const et = u32(), n = u64(); const a = []; for (let i = 0; i < n; i++) a.push(val(et)); return a; }
    const at = o; o += size[t];
    return t === 5 ? b.readInt32LE(at) : t === 4 ? b.readUInt32LE(at) : t === 7 ? b[at] !== 0 : null;
  };
  u32(); u64(); const nkv = u64();
  const kv = {};
  for (let i = 0; i < nkv; i++) { const k = str(); kv[k] = val(u32()); }
  const toks = kv['tokenizer.ggml.tokens'], types = kv['tokenizer.ggml.token_type'];
  const vocab = Object.create(null), added = [];
  toks.forEach((t, i) => {
    if (types[i] === 4 && t === '[PAD' + i + ']') return;
    if (!(t in vocab)) vocab[t] = i;
    if (types[i] === 3 || types[i] === 4)
      added.push({ id: i, content: t, single_word: false, lstrip: false, rstrip: false, normalized: types[i] === 4, special: types[i] === 3 });
  });
  const pre = PRE[kv['tokenizer.ggml.pre']];
  if (!pre) throw new Error('no patterns for pre-tokenizer ' + kv['tokenizer.ggml.pre']);
  return {
    version: '1.0', truncation: null, padding: null, added_tokens: added, normalizer: null,
    pre_tokenizer: { type: 'Sequence', pretokenizers: pre.map((r) => ({ type: 'Split', pattern: { Regex: r }, behavior: 'Isolated', invert: false }))
      .concat([{ type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: false }]) },
    post_processor: null, decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: null, end_of_word_suffix: null,
      fuse_unk: false, byte_fallback: false, vocab, merges: kv['tokenizer.ggml.merges'] },
  };
}

async function main() {
  const [cmd, a, b] = process.argv.slice(2);
  if (cmd === 'gen' || cmd === 'genbench') {
    const r = rng(Number(b || 1));
    const out = [];
    for (let i = 0; i < Number(a); i++) {
      const t = genText(r, cmd === 'genbench');
      out.push(cmd === 'gen' ? JSON.stringify(t) : t);
    }
    process.stdout.write(out.join(cmd === 'gen' ? '\n' : '') + (cmd === 'gen' ? '\n' : ''));
    return;
  }
  if (cmd === 'chat') { // chat CONFIG N SEED: conversations (JSONL) and the Jinja renderings (JSONL)
    const { Template } = require(path.join(process.cwd(), 'node_modules', '@huggingface', 'jinja'));
    const cfg = JSON.parse(fs.readFileSync(a, 'utf8'));
    const tmpl = new Template(cfg.chat_template);
    const bos = typeof cfg.bos_token === 'string' ? cfg.bos_token : cfg.bos_token.content;
    const eos = typeof cfg.eos_token === 'string' ? cfg.eos_token : cfg.eos_token.content;
    const r = rng(Number(process.argv[5] || 1));
    const roles = ['system', 'user', 'assistant', 'tool', 'user', 'assistant'];
    const convs = [], outs = [];
    for (let i = 0; i < Number(b); i++) {
      const n = 1 + Math.floor(r() * 7), msgs = [];
      for (let k = 0; k < n; k++) msgs.push({ role: roles[Math.floor(r() * roles.length)], content: genText(r) });
      convs.push(JSON.stringify(msgs));
      outs.push(JSON.stringify(tmpl.render({ messages: msgs, bos_token: bos, eos_token: eos, add_generation_prompt: true })));
    }
    const dir = process.argv[6] || '.';
    fs.writeFileSync(path.join(dir, 'chat_convs.jsonl'), convs.join('\n') + '\n');
    fs.writeFileSync(path.join(dir, 'chat_hf.jsonl'), outs.join('\n') + '\n');
    return;
  }
  const { Tokenizer } = loadHF();
  const t0 = process.hrtime.bigint();
  const tok = a.endsWith('.gguf') ? Tokenizer.fromString(JSON.stringify(gguf2json(a))) : Tokenizer.fromFile(a);
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
