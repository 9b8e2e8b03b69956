// Regenerates escape.json: node gen-escape.js > escape.json
// Each case is pi's normalize-then-encodeURIComponent of an input, or null
// where pi's normalizePermissionForwardingSessionId yields null.
const inputs = [];
for (let c = 0; c < 128; c++) inputs.push("s" + String.fromCharCode(c) + "e");
inputs.push(
  "parent session", "a/b", "../x", "é", "日本", "😀", "!*'()", "~", "%", "+", "?", "#", "&", "=",
  "%2F", "a%20b", "ñandú", "Ω≈ç√", "\u00a0", "x\u00a0", "\ufeffid\ufeff", "\u0085id\u0085",
  "\u2000id\u200a", "\u3000id", "\u2028id\u2029", " unknown ", "UNKNOWN", "Unknown", "unknowns", "un\u212anown", "UNKNOWN\u0085",
  "", "   ", "\t\n", ".", "..", "...", "a.b", "019a7f3c-1b2e-7c4d-9e8f-0a1b2c3d4e5f",
  "\u0000", "\u007f", "\u0080", "\u07ff", "\u0800", "\uffff", "\u{10000}", "\u{10ffff}");
const norm = (s) => { const t = s.trim(); return t === "" || t.toLowerCase() === "unknown" ? null : t; };
const out = inputs.map((input) => { const n = norm(input); return { input, escaped: n === null ? null : encodeURIComponent(n) }; });
console.log(JSON.stringify(out, null, 1));
