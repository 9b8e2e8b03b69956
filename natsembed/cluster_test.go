package natsembed

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Three nodes form a JetStream cluster, and a three-replica stream
// survives losing one node.
func TestClusterOfThree(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	var nodes []*Server
	defer func() {
		for _, n := range nodes {
			n.Shutdown(ctx)
		}
	}()
	// Every node of a JetStream cluster lists every route, its own
	// included, so the route ports are chosen first.
	ports := freePorts(t, 3)
	var routes []string
	for _, p := range ports {
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", p))
	}
	for i := range 3 {
		n, err := Start(ctx, Options{
			ServerName: fmt.Sprintf("n%d", i), Port: -1, StoreDir: t.TempDir(),
			Cluster: &Cluster{Name: "courier-test", Port: ports[i], Routes: routes},
		})
		if err != nil {
			t.Fatalf("Start node %d: %v", i, err)
		}
		nodes = append(nodes, n)
		if got := n.ClusterURL(); got != routes[i] {
			t.Fatalf("node %d ClusterURL = %q, want %q", i, got, routes[i])
		}
	}
	urls := make([]string, len(nodes))
	for i, n := range nodes {
		urls[i] = n.ClientURL()
	}
	nc, err := nats.Connect(strings.Join(urls, ","), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	// The meta leader is elected after the nodes accept clients: retry,
	// within the deadline, until the cluster can place three replicas.
	var st jetstream.Stream
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		short, c := context.WithTimeout(ctx, 2*time.Second)
		st, err = js.CreateStream(short, jetstream.StreamConfig{Name: "R3", Subjects: []string{"r3.>"}, Replicas: 3})
		c()
		if err == nil {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no three-replica stream within the deadline: %v", err)
		case <-tick.C:
		}
	}
	if _, err := js.Publish(ctx, "r3.a", []byte("one")); err != nil {
		t.Fatal(err)
	}
	// Lose the node the stream leads on; the other two keep the message.
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range nodes {
		if n.NATS().Name() == info.Cluster.Leader {
			if err := n.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			nodes = append(nodes[:i], nodes[i+1:]...)
			break
		}
	}
	if len(nodes) != 2 {
		t.Fatalf("stream leader %q is none of the nodes", info.Cluster.Leader)
	}
	for {
		short, c := context.WithTimeout(ctx, 2*time.Second)
		msg, err := st.GetLastMsgForSubject(short, "r3.a")
		c()
		if err == nil {
			if string(msg.Data) != "one" {
				t.Fatalf("after losing a node: %q", msg.Data)
			}
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("message not readable after losing the leader: %v", err)
		case <-tick.C:
		}
	}
}

// freePorts finds n loopback ports nobody listens on now.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

// A cluster node without routes cannot run JetStream: Start says why at
// once instead of waiting out ReadyTimeout.
func TestStartReportsFatal(t *testing.T) {
	start := time.Now()
	_, err := Start(t.Context(), Options{ServerName: "lone", Port: -1, StoreDir: t.TempDir(), Cluster: &Cluster{Name: "c", Port: -1}})
	if err == nil || !strings.Contains(err.Error(), "routes") {
		t.Fatalf("Start of a lone cluster node: err = %v, want the server's reason naming routes", err)
	}
	if took := time.Since(start); took > ReadyTimeout/2 {
		t.Errorf("Start took %s to report a fatal error", took)
	}
}
