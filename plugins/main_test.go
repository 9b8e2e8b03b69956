package plugins

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/seed6639df8c/courier/chain"
	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/plugins/confine"
	"github.com/seed6639df8c/courier/reviewlog"
	"github.com/seed6639df8c/courier/rules"
	"github.com/seed6639df8c/courier/wire"
)

// The binaries the tests run, built once by TestMain (without -race: they
// are the plugins, not the code under test).
var (
	testauthz    string // plugins/testdata/plugins/testauthz
	testauthzSum string
	testHost     string // plugins/testdata/host
	denylistBin  string // cmd/courier-authz-denylist
	readonlyBin  string // cmd/courier-authz-readonly
	hostileBin   string // plugins/testdata/plugins/hostile
	rawBin       string // plugins/testdata/plugins/rawplugin
	brokerBin    string // cmd/broker
	// testPlan is the confinement this machine gives, probed once: the
	// harness runs every plugin confined unless a test says otherwise.
	testPlan *confine.Plan
)

func TestMain(m *testing.M) {
	// This test binary is the confined plugins' init too (Probe and the
	// runner re-execute /proc/self/exe with confine.Command).
	if len(os.Args) > 1 && os.Args[1] == confine.Command {
		os.Exit(confine.Main(os.Args[2:], os.Stdout, os.Stderr))
	}
	dir, err := os.MkdirTemp("", "courier-plugins-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := func() int {
		defer os.RemoveAll(dir)
		testauthz = filepath.Join(dir, "testauthz")
		testHost = filepath.Join(dir, "host")
		denylistBin = filepath.Join(dir, "courier-authz-denylist")
		readonlyBin = filepath.Join(dir, "courier-authz-readonly")
		hostileBin = filepath.Join(dir, "hostile")
		rawBin = filepath.Join(dir, "rawplugin")
		brokerBin = filepath.Join(dir, "broker")
		for out, pkg := range map[string]string{
			testauthz: "./testdata/plugins/testauthz", testHost: "./testdata/host",
			denylistBin: "../cmd/courier-authz-denylist", readonlyBin: "../cmd/courier-authz-readonly",
			hostileBin: "./testdata/plugins/hostile", brokerBin: "../cmd/broker",
			rawBin: "./testdata/plugins/rawplugin",
		} {
			cmd := exec.Command("go", "build", "-o", out, pkg)
			if b, err := cmd.CombinedOutput(); err != nil {
				fmt.Fprintf(os.Stderr, "build %s: %v\n%s", pkg, err, b)
				return 1
			}
		}
		testauthzSum = fileSum(testauthz)
		testPlan = confine.Probe(context.Background())
		for _, miss := range testPlan.Missing {
			fmt.Fprintf(os.Stderr, "plugins test: plugins run without %s\n", miss)
		}
		return m.Run()
	}()
	os.Exit(code)
}

func fileSum(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		panic(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// spec is a link on testauthz with the given flags.
func spec(name string, args ...string) rules.AuthorizerLink {
	return rules.AuthorizerLink{
		Name: name, Path: testauthz, SHA256: testauthzSum, Args: args,
		Timeout: 5 * time.Second, OnFailure: rules.LinkFailDeny, Mode: rules.LinkEnforce,
	}
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// harness is a loaded chain with its review log and diagnostic log.
type harness struct {
	t       *testing.T
	chain   *chain.Chain
	members []chain.Member
	errs    []error
	log     *reviewlog.Log
	logDir  string
	diag    *syncBuffer
}

// load loads links confined as this machine allows (testPlan).
func load(t *testing.T, opts Options, links ...rules.AuthorizerLink) *harness {
	t.Helper()
	return loadPlan(t, testPlan, opts, links...)
}

// loadPlan loads links with plan as their confinement; nil runs them
// unconfined.
func loadPlan(t *testing.T, plan *confine.Plan, opts Options, links ...rules.AuthorizerLink) *harness {
	t.Helper()
	h := &harness{t: t, logDir: t.TempDir(), diag: &syncBuffer{}}
	var err error
	if h.log, err = reviewlog.Open(filepath.Join(h.logDir, "review.jsonl")); err != nil {
		t.Fatal(err)
	}
	zl := zerolog.New(h.diag).Level(zerolog.TraceLevel)
	opts.Logger = &zl
	opts.Confinement = plan
	h.members, h.errs = loadMembers(t.Context(), links, h.log, opts)
	h.chain = chain.New(h.log, h.members, chain.WithLogger(zl))
	t.Cleanup(func() {
		if err := h.chain.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		h.log.Close()
	})
	return h
}

// ask resolves one ask on the bash surface whose value tells testauthz
// what to do.
func (h *harness) ask(value string) (decision.Decision, bool) {
	return h.askOn("bash", value)
}

func (h *harness) askOn(surface, value string) (decision.Decision, bool) {
	h.t.Helper()
	return h.chain.Resolve(h.t.Context(), request(surface, value))
}

func request(surface, value string) wire.Request {
	return wire.Request{
		ID: "req-" + strings.ReplaceAll(value, " ", "_"), CreatedAt: 1,
		RequesterSessionID: "child-1", TargetSessionID: "parent", RequesterAgentName: "Explore",
		Surface: surface, Value: value,
		AccessIntent: &wire.AccessIntent{
			Surface: surface, MatchValues: []string{value}, RequesterCwd: "/work/child",
			Principal: wire.Principal{SessionID: "child-1", AgentName: "Explore"},
		},
	}
}

// entries returns the review-log entries of event.
func (h *harness) entries(event string) []map[string]any {
	h.t.Helper()
	f, err := os.Open(filepath.Join(h.logDir, "review.jsonl"))
	if err != nil {
		h.t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			h.t.Fatalf("review log line %q: %v", sc.Text(), err)
		}
		if m["event"] == event {
			out = append(out, m)
		}
	}
	return out
}

// link returns the supervised link of the chain's only member.
func (h *harness) link() *supervised {
	h.t.Helper()
	s, ok := h.member(0).(*supervised)
	if !ok {
		h.t.Fatalf("member 0 is %T, not supervised", h.member(0))
	}
	return s
}

func (h *harness) member(i int) chain.Link {
	return h.members[i].Link
}

// wantNoAllow fails when d approved.
func wantNoAllow(t *testing.T, d decision.Decision, decided bool) {
	t.Helper()
	if decided && d.Approved() {
		t.Fatalf("a failing link allowed: %+v", d)
	}
}

// withTimeout is a context for one wait in a test.
func withTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}
