package reliability

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/seed6639df8c/courier/natsbox"
	"github.com/seed6639df8c/courier/natsembed"
	"github.com/seed6639df8c/courier/wire"
)

// natsSlowConsumer: a burst of asks published straight into the engine
// (the bytes a child publishes, as fast as the engine takes them) and a
// few real children at the same time, at one broker. Every ask is
// answered once, bound to its request's bytes, with its rule's answer;
// the broker's peak memory is reported.
func (s *suite) natsSlowConsumer(t *testing.T) {
	m := s.scale(1000, 10000)
	kids := s.scale(10, 40)
	srv := singleServer(t)
	url := srv.ClientURL()
	nc, js := natsConn(t, url)
	watch := watchResponses(t, nc)
	r := s.newRig(t)
	log := filepath.Join(r.base, "review.jsonl")
	b := r.natsBroker(log, "--nats", url, "--nats-local")
	r.natsServing(js, b)

	// The burst, all in the stream before the children start.
	start := time.Now()
	digests := make(map[string]string, m) // response subject → request digest
	values := make(map[string]string, m)
	var acks []jetstream.PubAckFuture
	for i := range m {
		id := fmt.Sprintf("perm-burst-%05d", i)
		data := requestJSON(id, natsValue(i), 0)
		subj, err := natsbox.RequestSubject("parent", natsOwner, id)
		if err != nil {
			t.Fatal(err)
		}
		resp, _ := natsbox.ResponseSubject("parent", natsOwner, id)
		msgID, _ := natsbox.MsgID("parent", natsOwner, id)
		digests[resp], values[resp] = wire.RequestDigest(data), natsValue(i)
		f, err := js.PublishMsgAsync(&nats.Msg{Subject: subj, Data: data}, jetstream.WithMsgID(msgID))
		if err != nil {
			t.Fatalf("publishing ask %d: %v", i, err)
		}
		acks = append(acks, f)
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(waitLimit):
		t.Fatalf("the engine did not acknowledge the burst within %s", waitLimit)
	}
	for i, f := range acks {
		select {
		case err := <-f.Err():
			t.Fatalf("ask %d not taken by the engine: %v", i, err)
		default:
		}
	}
	published := time.Since(start)
	children := make([]*natsChild, kids)
	for i := range children {
		children[i] = r.startNATSChild(url, fmt.Sprintf("k%d", i), natsValue(i), waitLimit)
	}
	r.waitFor(fmt.Sprintf("%d answers", m+kids), func() bool {
		return watch.answered() >= m+kids
	})
	burst := time.Since(start)
	answers := results(t, children, waitLimit)
	hwm := vmHWM(b.pid())
	b.stop(t)

	// Every burst answer: bound to its request's bytes, its rule's answer.
	var wrong []string
	for subj, digest := range digests {
		data, ok := watch.first(subj)
		if !ok {
			wrong = append(wrong, subj+": no answer")
			continue
		}
		resp, _, err := wire.DecodeResponse(data)
		id := subj[strings.LastIndexByte(subj, '.')+1:]
		if err == nil {
			err = wire.CheckBinding(resp, id, digest, true)
		}
		if err != nil {
			wrong = append(wrong, fmt.Sprintf("%s: %v", subj, err))
			continue
		}
		if resp.Approved != (values[subj] == natsAllow) {
			wrong = append(wrong, fmt.Sprintf("%s: approved=%v for %q (%v)", subj, resp.Approved, values[subj], resp.DenialReason))
		}
	}
	tl := countAnswers(answers)
	tl.asked += m
	tl.answered += m - len(wrong)
	for i := range m {
		tl.ids[fmt.Sprintf("perm-burst-%05d", i)] = true
	}
	tl.lost = append(wrong, tl.lost...)
	twice, missing, repeats := natsOnce(t, tl, watch, log)
	figures(t, "asked", tl.asked, "answered", tl.answered, "lost", len(tl.lost), "twice", len(twice), "republished", repeats,
		"unavailable", tl.unavailable, "burst", m, "children", kids, "published_in", published.Round(time.Millisecond),
		"all_answered_in", burst.Round(time.Millisecond), "asks_per_s", fmt.Sprintf("%.0f", float64(m+kids)/burst.Seconds()),
		"broker_vmhwm_kib", hwm, "longest_child_ask", ms(tl.longest))
	check(t, tl, twice, false)
	if len(missing) > 0 {
		t.Errorf("%d answered asks the broker did not log, e.g. %s", len(missing), missing[0])
	}
}

// natsCluster: three embedded servers clustered in this process, the
// streams and buckets replicated three times. With the asks waiting in
// the stream (the broker frozen), the node that leads the request stream
// is shut down; the broker and children, given all three URLs, go on.
// Every ask is answered exactly once.
func (s *suite) natsCluster(t *testing.T) {
	n := s.scale(20, 60)
	ports := []int{freePort(t), freePort(t), freePort(t)}
	var routes []string
	for _, p := range ports {
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", p))
	}
	nodes := make([]*natsembed.Server, 3)
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range nodes {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
			defer cancel()
			nodes[i], errs[i] = natsembed.Start(ctx, natsembed.Options{
				ServerName: fmt.Sprintf("n%d", i+1), Host: "127.0.0.1", Port: -1, NoLog: true,
				StoreDir: filepath.Join(t.TempDir(), "jetstream"),
				Cluster:  &natsembed.Cluster{Name: "courier", Host: "127.0.0.1", Port: ports[i], Routes: routes},
			})
		})
	}
	wg.Wait()
	byName := map[string]*natsembed.Server{}
	var urls []string
	for i, srv := range nodes {
		if errs[i] != nil {
			t.Fatalf("starting node %d: %v", i+1, errs[i])
		}
		t.Cleanup(func() { shutdown(t, srv) })
		byName[fmt.Sprintf("n%d", i+1)] = srv
		urls = append(urls, srv.ClientURL())
	}
	url := strings.Join(urls, ",")
	nc, js := natsConn(t, url)
	waitFor(t, "JetStream's cluster to elect its leader", func() bool {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		_, err := js.AccountInfo(ctx)
		return err == nil
	})
	watch := watchResponses(t, nc)
	r := s.newRig(t)
	log := filepath.Join(r.base, "review.jsonl")
	b := r.natsBroker(log, "--nats", url, "--nats-local", "--nats-replicas", "3")
	r.natsServing(js, b)

	children, parked := r.parkAsks(b, js, url, "c", n, 60*time.Second)
	leader := streamLeader(t, js, requestStream)
	brokerOn := "?"
	for name, srv := range byName {
		if cz, err := srv.NATS().Connz(nil); err == nil {
			for _, c := range cz.Conns {
				if c.Name == "courier broker parent" {
					brokerOn = name
				}
			}
		}
	}
	down := time.Now()
	shutdown(t, byName[leader])
	b.thaw()
	answers := results(t, children, waitLimit)
	recovered := time.Since(down)
	r.natsServing(js, b)
	b.stop(t)

	tl := countAnswers(answers)
	twice, missing, repeats := natsOnce(t, tl, watch, log)
	figures(t, "asked", tl.asked, "answered", tl.answered, "lost", len(tl.lost), "twice", len(twice), "republished", repeats,
		"unavailable", tl.unavailable, "nodes", 3, "replicas", 3, "node_down", leader+"(stream leader)", "broker_on", brokerOn,
		"parked_in", parked.Round(time.Millisecond), "all_answered_after_loss", recovered.Round(time.Millisecond),
		"longest_ask", ms(tl.longest))
	check(t, tl, twice, false)
	if len(missing) > 0 {
		t.Errorf("answered asks the broker did not log: %v", missing)
	}
}

// streamLeader is the server name that leads the stream's replicas.
func streamLeader(t *testing.T, js jetstream.JetStream, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Cluster == nil || info.Cluster.Leader == "" {
		t.Fatalf("stream %s has no cluster leader: %+v", name, info.Cluster)
	}
	if got := len(info.Cluster.Replicas) + 1; got != 3 {
		t.Errorf("stream %s has %d replicas, want 3 (--nats-replicas 3)", name, got)
	}
	return info.Cluster.Leader
}
