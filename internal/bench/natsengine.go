package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/seed6639df8c/courier/natsbox"
	"github.com/seed6639df8c/courier/natsembed"
	"github.com/seed6639df8c/courier/natsforward"
)

// natsOwner is the asking identity's name in the subjects, for the
// library's Client and the child processes alike.
const natsOwner = "bench"

// engineWait bounds starting the engine, a cluster electing its leader,
// and connecting to it.
const engineWait = 30 * time.Second

// engine is the NATS JetStream server, or the servers of a cluster, that
// the bench process runs for one phase: the broker and the requesters
// are its clients, and its store is under the run's base, on the
// filesystem under test.
type engine struct {
	nodes []*natsembed.Server
	names []string
}

// startEngine runs one server on a free loopback port.
func startEngine(ctx context.Context, dir string) (*engine, error) {
	ctx, cancel := context.WithTimeout(ctx, engineWait)
	defer cancel()
	srv, err := natsembed.Start(ctx, natsembed.Options{ServerName: "n1", Port: -1, StoreDir: filepath.Join(dir, "n1"), NoLog: true})
	if err != nil {
		return nil, fmt.Errorf("the embedded NATS server: %w", err)
	}
	return &engine{nodes: []*natsembed.Server{srv}, names: []string{"n1"}}, nil
}

// startCluster runs n servers routed to one another on loopback, started
// at once (each waits for its routes), and waits until JetStream's
// cluster has a leader and can place replicated streams.
func startCluster(ctx context.Context, dir string, n int) (*engine, error) {
	ctx, cancel := context.WithTimeout(ctx, engineWait)
	defer cancel()
	// Every node lists every route, its own included, so the route
	// ports are chosen first.
	ports, err := freePorts(n)
	if err != nil {
		return nil, fmt.Errorf("the NATS cluster's route ports: %w", err)
	}
	routes := make([]string, n)
	for i, p := range ports {
		routes[i] = fmt.Sprintf("nats://127.0.0.1:%d", p)
	}
	e := &engine{nodes: make([]*natsembed.Server, n), names: make([]string, n)}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		e.names[i] = fmt.Sprintf("n%d", i+1)
		wg.Go(func() {
			e.nodes[i], errs[i] = natsembed.Start(ctx, natsembed.Options{
				ServerName: e.names[i], Port: -1, StoreDir: filepath.Join(dir, e.names[i]), NoLog: true,
				Cluster: &natsembed.Cluster{Name: "courier-bench", Port: ports[i], Routes: routes},
			})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		e.shutdown()
		return nil, fmt.Errorf("the NATS cluster of %d: %w", n, err)
	}
	if err := e.awaitLeader(ctx); err != nil {
		e.shutdown()
		return nil, err
	}
	return e, nil
}

// awaitLeader waits until the cluster answers a JetStream request, which
// it does once its nodes elected a meta leader: before that, the
// broker's streams could not be created.
func (e *engine) awaitLeader(ctx context.Context) error {
	nc, err := natsbox.Connect(ctx, natsbox.Options{URL: e.url(), Local: true, Name: "courier-bench probe"})
	if err != nil {
		return fmt.Errorf("connecting to the NATS cluster: %w", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("JetStream on the NATS cluster: %w", err)
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		op, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := js.AccountInfo(op)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the NATS cluster elected no JetStream leader: %w (last: %v)", context.Cause(ctx), err)
		case <-tick.C:
		}
	}
}

// freePorts finds n loopback ports nobody listens on now.
func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// urls are the nodes' client URLs.
func (e *engine) urls() []string {
	out := make([]string, len(e.nodes))
	for i, n := range e.nodes {
		out[i] = n.ClientURL()
	}
	return out
}

// url is every node's URL, comma-separated, as the broker's --nats takes
// them.
func (e *engine) url() string { return strings.Join(e.urls(), ",") }

// nodeOf names the node a client connection of that name is connected
// to, "" when none is.
func (e *engine) nodeOf(connName string) string {
	for i, n := range e.nodes {
		cz, err := n.NATS().Connz(nil)
		if err != nil {
			continue
		}
		for _, c := range cz.Conns {
			if c.Name == connName {
				return e.names[i]
			}
		}
	}
	return ""
}

// shutdown stops every node; it is safe to call twice.
func (e *engine) shutdown() error {
	var errs []error
	for i, n := range e.nodes {
		if n == nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), natsembed.ShutdownTimeout)
		errs = append(errs, n.Shutdown(ctx))
		cancel()
		e.nodes[i] = nil
	}
	return errors.Join(errs...)
}

// natsClient is the library's Client over NATS with a connection of its
// own, to url (one node, or several), as a long-lived host's would be.
type natsClient struct {
	conn   *nats.Conn
	client *natsforward.Client
}

func dialNATS(ctx context.Context, url string) (*natsClient, error) {
	ctx, cancel := context.WithTimeout(ctx, engineWait)
	defer cancel()
	conn, err := natsbox.Connect(ctx, natsbox.Options{
		URL: url, Local: true, Name: "courier-bench requesters",
		// As the child does: replies come to this owner's own inboxes.
		InboxPrefix: "_INBOX_" + natsOwner,
	})
	if err != nil {
		return nil, fmt.Errorf("connecting the requesters to NATS at %s: %w", url, err)
	}
	js, err := jetstream.New(conn)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("JetStream at %s: %w", url, err)
	}
	return &natsClient{conn: conn, client: &natsforward.Client{Conn: conn, JS: js, Owner: natsOwner, Timeout: askTimeout}}, nil
}

func (c *natsClient) close() { c.conn.Close() }

// requestsLeader names the node that leads the requests stream's
// replicas, "" when that is unknown.
func (c *natsClient) requestsLeader(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st, err := c.client.JS.Stream(ctx, natsbox.StreamRequests)
	if err != nil {
		return ""
	}
	info, err := st.Info(ctx)
	if err != nil || info.Cluster == nil {
		return ""
	}
	return info.Cluster.Leader
}
