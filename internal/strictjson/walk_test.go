package strictjson

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// walkCases are checked documents with every kind of value, space in every
// place a walk skips it, keys and strings that need decoding, and values
// whose end a skip must find past brackets and quotes inside strings.
var walkCases = []string{
	`{}`, `[]`, `""`, `0`, `-1.5e+3`, `true`, `false`, `null`,
	` { "a" : [ 1 , "x" , { } ] , "b" : -0.5e3 } `, "\t[\n1\r,\n2 ]\n",
	`{"\u0069d":"x","i\u0064x":1}`, `{"a/b":1,"a\/c":2,"\"":3,"\\":4}`,
	`{"s":"\u00e9\n\"","t":"é","u":"` + "\xff" + `","v":"\ud83d\ude00","w":"\ud800x","x":"\udc00\ud800"}`,
	`[[],{},"",0,-0,1e2,true,false,null,"\\"]`, `{"a":{"b":{"c":[{"d":"e"}]}}}`,
	`{"brackets":"{[}]\"{","n":[["]"],{"}":"{"}]}`, `{"é":1,"e":{"É":[1,{"\u00c9x":2}]}}`,
	"{\"\xed\xa0\x80\":1,\"ok\":2}", `"\b\f\n\r\t\/\u0000\u001f\u2028\uFFFD"`,
	// Past the bytes skipString looks at one by one: escaped quotes and
	// runs of backslashes on both sides of the boundary.
	`{"` + strings.Repeat("k", 31) + `\"":["` + strings.Repeat("x", 30) + `\\\"\\","` + strings.Repeat("y", 40) + `\\\\"],"é` + strings.Repeat("z", 40) + `":"\u00e9"}`,
}

// FuzzWalkAgreesWithUnmarshal pins the walker to encoding/json's Unmarshal
// on every checked document: the same members under the same decoded keys
// with the same raw values, in document order, the same array items, the
// same strings, and offsets that point at the bytes handed out. It is the
// oracle the mailbox readers' splitting (wire/fields.go) was first held to.
func FuzzWalkAgreesWithUnmarshal(f *testing.F) {
	for _, doc := range walkCases {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if Check(data) != nil {
			return
		}
		root := Root(data)
		if !bytes.Equal(root.Raw(), bytes.TrimSpace(data)) {
			t.Fatalf("Root(%q) = %q", data, root.Raw())
		}
		compareWalk(t, data, root)
	})
}

func TestWalkAgreesWithUnmarshal(t *testing.T) {
	for _, doc := range walkCases {
		if err := Check([]byte(doc)); err != nil {
			t.Fatalf("case %q: %v", doc, err)
		}
		compareWalk(t, []byte(doc), Root([]byte(doc)))
	}
}

func compareWalk(t *testing.T, doc []byte, v Value) {
	t.Helper()
	raw := v.Raw()
	if !bytes.Equal(doc[v.Offset():v.Offset()+len(raw)], raw) {
		t.Fatalf("value %q is not at its offset %d", raw, v.Offset())
	}
	if KindOf(raw) != v.Kind() {
		t.Fatalf("KindOf(%q) = %q, Value.Kind %q", raw, KindOf(raw), v.Kind())
	}
	switch v.Kind() {
	case KindObject:
		var want map[string]json.RawMessage
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatal(err)
		}
		m := v.Members()
		n := 0
		for m.Next() {
			n++
			k := m.Key()
			if k.Kind() != KindString || doc[k.Offset()] != '"' {
				t.Fatalf("key %q at %d is not a string", k.Raw(), k.Offset())
			}
			name := Unquote(k.Raw())
			if !bytes.Equal(k.Text(), name) || k.Plain() != Plain(k.Raw()) {
				t.Fatalf("key %s: Text %q Plain %v, Unquote %q Plain %v", k.Raw(), k.Text(), k.Plain(), name, Plain(k.Raw()))
			}
			value, ok := want[string(name)]
			if !ok || !bytes.Equal(m.Value().Raw(), value) {
				t.Fatalf("member %q of %s = %s, Unmarshal %s (%v)", name, raw, m.Value().Raw(), value, ok)
			}
			compareWalk(t, doc, m.Value())
		}
		if m.Err() != nil || n != len(want) {
			t.Fatalf("members of %s: %d (%v), Unmarshal %d", raw, n, m.Err(), len(want))
		}
		if it := v.Items(); it.Next() || it.Err() == nil {
			t.Fatalf("Items of object %s walked", raw)
		}
	case KindArray:
		var want []json.RawMessage
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatal(err)
		}
		it := v.Items()
		n := 0
		for ; it.Next(); n++ {
			if n >= len(want) || !bytes.Equal(it.Value().Raw(), want[n]) {
				t.Fatalf("item %d of %s = %s", n, raw, it.Value().Raw())
			}
			compareWalk(t, doc, it.Value())
		}
		if it.Err() != nil || n != len(want) {
			t.Fatalf("items of %s: %d (%v), Unmarshal %d", raw, n, it.Err(), len(want))
		}
		if m := v.Members(); m.Next() || m.Err() == nil {
			t.Fatalf("Members of array %s walked", raw)
		}
	case KindString:
		var want string
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatal(err)
		}
		if got := Unquote(raw); string(got) != want {
			t.Fatalf("Unquote(%s) = %q, Unmarshal %q", raw, got, want)
		}
		if got := v.Text(); string(got) != want {
			t.Fatalf("Value.Text of %s = %q, Unmarshal %q", raw, got, want)
		}
		if v.Verbatim() {
			// Written back by encoding/json, the text is raw again.
			var enc bytes.Buffer
			e := json.NewEncoder(&enc)
			e.SetEscapeHTML(false)
			if err := e.Encode(want); err != nil || !bytes.Equal(bytes.TrimSuffix(enc.Bytes(), []byte("\n")), raw) {
				t.Fatalf("Verbatim string %s encodes as %s (%v)", raw, enc.Bytes(), err)
			}
		}
		plain := utf8.Valid(raw) && bytes.IndexByte(raw, '\\') < 0
		if Plain(raw) != plain || v.Plain() != plain {
			t.Fatalf("Plain(%s) = %v, Value.Plain %v, want %v", raw, Plain(raw), v.Plain(), plain)
		}
		got, whole := AppendUnquote([]byte("prefix"), raw)
		if string(got) != "prefix"+want {
			t.Fatalf("AppendUnquote(prefix, %s) = %q, Unmarshal %q", raw, got, want)
		}
		if wantWhole := utf8.Valid(raw) && !surrogateEscape(raw); whole != wantWhole {
			t.Fatalf("AppendUnquote(%s) whole = %v, want %v", raw, whole, wantWhole)
		}
	case KindNumber:
		var want json.Number
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		if err := d.Decode(&want); err != nil || string(want) != string(raw) {
			t.Fatalf("number %s decodes as %s (%v)", raw, want, err)
		}
	case KindNull, KindTrue, KindFalse:
		if string(raw) != map[Kind]string{KindNull: "null", KindTrue: "true", KindFalse: "false"}[v.Kind()] {
			t.Fatalf("literal %s of kind %q", raw, v.Kind())
		}
	default:
		t.Fatalf("value %q has no kind", raw)
	}
}

// surrogateEscape reports whether a string's text holds a \u escape of a
// UTF-16 surrogate, read the slow way: decoding each escape on its own.
func surrogateEscape(raw []byte) bool {
	s := string(raw[1 : len(raw)-1])
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			continue
		}
		if s[i+1] == 'u' {
			if h := strings.ToLower(s[i+2 : i+4]); "d8" <= h && h <= "df" {
				return true
			}
			i += 5
			continue
		}
		i++
	}
	return false
}

// A walk trusts Check, but bytes that did not pass it must still end the
// walk with an error, never a hang or a read out of bounds.
func TestWalkRefusesUncheckedBytes(t *testing.T) {
	for _, doc := range []string{`{`, `{"a"`, `{"a":`, `{"a":}`, `{"a":1,`, `{1:2}`, `{"a" 1}`, `{"a":,}`, `{"a\"`, `{"a":"b`} {
		m := Root([]byte(doc)).Members()
		for m.Next() {
		}
		if m.Err() == nil {
			t.Errorf("Members of %s ended without an error", doc)
		}
	}
	for _, doc := range []string{`[`, `[1,`, `[}`, `[,}`, `[1 }`, `["a`} {
		it := Root([]byte(doc)).Items()
		for it.Next() {
		}
		if it.Err() == nil {
			t.Errorf("Items of %s ended without an error", doc)
		}
	}
	for _, s := range []string{`"\`, `"\u`, `"\u12"`, `"\ud800\u"`, `"`, ``} {
		Unquote([]byte(s)) // must not panic
		AppendUnquote(nil, []byte(s))
	}
}

func TestWalkAllocatesNothing(t *testing.T) {
	doc := []byte(`{"id":"perm-1","createdAt":1,"payload":{"tool":"bash","args":["ls","-la"],"n":-1.5e3},"list":[{"a":1},{"A":1}],"x":null}`)
	scratch := make([]byte, 0, 64)
	var walk func(v Value) int
	walk = func(v Value) int {
		n := 1
		switch v.Kind() {
		case KindObject:
			m := v.Members()
			for m.Next() {
				scratch, _ = AppendUnquote(scratch[:0], m.Key().Raw())
				n += walk(m.Value())
			}
		case KindArray:
			it := v.Items()
			for it.Next() {
				n += walk(it.Value())
			}
		}
		return n
	}
	if n := testing.AllocsPerRun(100, func() { walk(Root(doc)) }); n != 0 {
		t.Errorf("a walk allocated %v times, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() {
		if !Valid(doc) {
			t.Fatal("Valid refused the document")
		}
	}); n != 0 {
		t.Errorf("Valid allocated %v times, want 0", n)
	}
}

func BenchmarkWalk(b *testing.B) {
	doc := []byte(`{"id":"perm-1","createdAt":1757000000000,"requesterSessionId":"child-session","targetSessionId":"parent-session","requesterAgentName":"reviewer","payload":{"tool":"bash","args":{"command":"git status --short"},"cwd":"/home/u/project"},"source":"tool_call","surface":"bash","value":"git status --short","accessIntent":{"surface":"bash","matchValues":["git status --short"],"boundaryValue":null,"requesterCwd":"/home/u/project","principal":{"sessionId":"child-session","agentName":"reviewer"}},"requesterPid":4242}`)
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		m := Root(doc).Members()
		for m.Next() {
			Unquote(m.Key().Raw())
		}
	}
}

// stringRun reads eight bytes at a time; it must stop where a byte-by-byte
// scan stops, at every alignment.
func TestStringRunAgreesWithByteScan(t *testing.T) {
	special := []byte{'"', '\\', 0x00, 0x1f, 0x20, 0x7f, 0x80, 0xff, 'a', '!', '#', '[', 0x5c ^ 0x80, 0x22 ^ 0x80, 0x01, 0x21}
	slow := func(d []byte, i int, stopHigh bool) int {
		for ; i < len(d); i++ {
			if ch := d[i]; ch == '"' || ch == '\\' || ch < 0x20 || stopHigh && ch >= 0x80 {
				return i
			}
		}
		return i
	}
	for _, ch := range special {
		for pos := 0; pos < 20; pos++ {
			d := []byte(strings.Repeat("abcdefgh", 3))
			d[pos] = ch
			for start := 0; start <= pos+1 && start <= len(d); start++ {
				for _, stopHigh := range []bool{true, false} {
					if got, want := stringRun(d, start, stopHigh), slow(d, start, stopHigh); got != want {
						t.Fatalf("stringRun(%q, %d, %v) = %d, want %d", d, start, stopHigh, got, want)
					}
				}
			}
		}
	}
}

func FuzzStringRun(f *testing.F) {
	f.Add([]byte("abcdefgh\"ijklmnop"), uint8(0))
	f.Fuzz(func(t *testing.T, d []byte, start uint8) {
		i := int(start) % (len(d) + 1)
		for _, stopHigh := range []bool{true, false} {
			want := i
			for ; want < len(d); want++ {
				if ch := d[want]; ch == '"' || ch == '\\' || ch < 0x20 || stopHigh && ch >= 0x80 {
					break
				}
			}
			if got := stringRun(d, i, stopHigh); got != want {
				t.Fatalf("stringRun(%q, %d, %v) = %d, want %d", d, i, stopHigh, got, want)
			}
		}
	})
}
