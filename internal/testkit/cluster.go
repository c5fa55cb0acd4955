package testkit

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
)

// ClusterSize is the number of nats-servers StartCluster starts.
const ClusterSize = 3

// Cluster is a NATS JetStream cluster of ClusterSize servers in the test
// process: cluster routes on loopback, every write fsynced before it is
// acknowledged (sync_interval: always), and the accounts block of
// `orbit nats-config` for Creds, so that the project's identities hold as
// they would on a production cluster. Each node keeps its ports and store
// across Kill and Restart.
type Cluster struct {
	t     testing.TB
	Creds *events.Creds
	Nodes []*Node
}

// Node is one server of a Cluster.
type Node struct {
	// Name is the server name (n1, n2, n3).
	Name string
	// Port is the client port, fixed for the node's life.
	Port int
	// MonitorPort is the port of its http monitoring endpoint.
	MonitorPort int
	conf        string
	srv         *server.Server
}

// URL is the node's client URL.
func (n *Node) URL() string { return fmt.Sprintf("nats://127.0.0.1:%d", n.Port) }

// MonitorURL is the URL of the node's monitoring endpoint (/varz, /jsz).
func (n *Node) MonitorURL() string { return fmt.Sprintf("http://127.0.0.1:%d", n.MonitorPort) }

// Running reports whether the node's server is up.
func (n *Node) Running() bool { return n.srv != nil && n.srv.Running() }

// StartCluster starts a cluster that admits the identities in credsDir
// (created if missing) and shuts it down when the test ends. It returns
// once the cluster has elected its meta leader and answers JetStream
// requests.
func StartCluster(t testing.TB, credsDir string) *Cluster {
	t.Helper()
	return StartClusterWith(t, credsDir, events.DefaultMaxPayload)
}

// StartClusterWith is StartCluster with servers whose largest message is
// maxPayload bytes.
func StartClusterWith(t testing.TB, credsDir string, maxPayload int32) *Cluster {
	t.Helper()
	c := startCluster(t, credsDir, maxPayload)
	c.WaitReady()
	return c
}

// StartFreshCluster is StartCluster returning as soon as every server
// accepts connections, before the cluster has elected its JetStream meta
// leader: a cluster whose engines are started at the same moment as its
// servers.
func StartFreshCluster(t testing.TB, credsDir string) *Cluster {
	t.Helper()
	return startCluster(t, credsDir, events.DefaultMaxPayload)
}

func startCluster(t testing.TB, credsDir string, maxPayload int32) *Cluster {
	t.Helper()
	creds, err := events.EnsureCreds(credsDir)
	if err != nil {
		t.Fatalf("cluster creds: %v", err)
	}
	ports := freePorts(t, 3*ClusterSize)
	c := &Cluster{t: t, Creds: creds}
	dir := t.TempDir()
	var routes []string
	for i := range ClusterSize {
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", ports[ClusterSize+i]))
	}
	auth := events.AccountsBlock(creds)
	for i := range ClusterSize {
		n := &Node{Name: fmt.Sprintf("n%d", i+1), Port: ports[i], MonitorPort: ports[2*ClusterSize+i]}
		n.conf = filepath.Join(dir, n.Name+".conf")
		text := fmt.Sprintf(`server_name: %s
listen: "127.0.0.1:%d"
http: "127.0.0.1:%d"
max_payload: %d
jetstream {
  store_dir: %q
  sync_interval: always
  max_memory_store: 64MB
}
cluster {
  name: orbit
  listen: "127.0.0.1:%d"
  routes: [%s]
}
%s`, n.Name, n.Port, n.MonitorPort, maxPayload, filepath.Join(dir, n.Name), ports[ClusterSize+i], strings.Join(routes, ", "), auth)
		if err := os.WriteFile(n.conf, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		c.Nodes = append(c.Nodes, n)
	}
	for i := range c.Nodes {
		c.start(i)
	}
	t.Cleanup(c.Stop)
	return c
}

// FreeAddr returns a loopback address, 127.0.0.1:port, whose port was free
// a moment ago: for a listener configured in a file rather than chosen by
// the kernel.
func FreeAddr(t testing.TB) string {
	t.Helper()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(freePorts(t, 1)[0]))
}

// freePorts returns n distinct loopback ports that were free a moment ago.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var ports []int
	var listeners []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("free port: %v", err)
		}
		listeners = append(listeners, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range listeners {
		ln.Close()
	}
	return ports
}

func (c *Cluster) start(i int) {
	c.t.Helper()
	n := c.Nodes[i]
	opts, err := server.ProcessConfigFile(n.conf)
	if err != nil {
		c.t.Fatalf("node %s config: %v", n.Name, err)
	}
	opts.NoSigs, opts.NoLog = true, true
	srv, err := server.NewServer(opts)
	if err != nil {
		c.t.Fatalf("node %s: %v", n.Name, err)
	}
	srv.Start()
	if !srv.ReadyForConnections(time.Minute) {
		srv.Shutdown()
		c.t.Fatalf("node %s did not become ready", n.Name)
	}
	n.srv = srv
}

// URLs is every node's client URL, comma-separated: what --nats-url takes.
func (c *Cluster) URLs() string {
	var urls []string
	for _, n := range c.Nodes {
		urls = append(urls, n.URL())
	}
	return strings.Join(urls, ",")
}

// Kill shuts node i down at once, as a crash would leave it: its store
// stays for Restart.
func (c *Cluster) Kill(i int) {
	c.t.Helper()
	n := c.Nodes[i]
	if n.srv == nil {
		return
	}
	n.srv.Shutdown()
	n.srv.WaitForShutdown()
	n.srv = nil
}

// ClientNodes returns the indexes of the running nodes that hold a client
// connection named name (nats.Name: orbit-cli, orbit-engine).
func (c *Cluster) ClientNodes(name string) []int {
	var at []int
	for i, n := range c.Nodes {
		if !n.Running() {
			continue
		}
		conns, err := n.srv.Connz(&server.ConnzOptions{})
		if err != nil {
			continue
		}
		for _, conn := range conns.Conns {
			if conn.Name == name {
				at = append(at, i)
				break
			}
		}
	}
	return at
}

// Restart starts node i again on its ports and store.
func (c *Cluster) Restart(i int) {
	c.t.Helper()
	c.start(i)
}

// Reconfigure stops node i, rewrites its configuration file with edit
// and starts it again on its ports and store: a server restarted with
// another configuration, as an operator does one at a time.
func (c *Cluster) Reconfigure(i int, edit func(conf string) string) {
	c.t.Helper()
	n := c.Nodes[i]
	data, err := os.ReadFile(n.conf)
	if err != nil {
		c.t.Fatal(err)
	}
	c.Kill(i)
	if err := os.WriteFile(n.conf, []byte(edit(string(data))), 0o600); err != nil {
		c.t.Fatal(err)
	}
	c.start(i)
}

// Stop shuts every node down.
func (c *Cluster) Stop() {
	for i := range c.Nodes {
		c.Kill(i)
	}
}

// Connect connects to the cluster as the project's engine identity.
func (c *Cluster) Connect() *nats.Conn {
	c.t.Helper()
	opt, err := nats.NkeyOptionFromSeed(c.Creds.File(events.IdentityEngine))
	if err != nil {
		c.t.Fatal(err)
	}
	nc, err := nats.Connect(c.URLs(), opt, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		c.t.Fatalf("connecting to the cluster: %v", err)
	}
	c.t.Cleanup(nc.Close)
	return nc
}

// WaitReady waits until the running nodes have a JetStream meta leader and
// answer account info.
func (c *Cluster) WaitReady() {
	c.t.Helper()
	nc := c.Connect()
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		c.t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := js.AccountInfo(ctx)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("the cluster has no JetStream: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// StreamLeader returns the index of the node that leads stream, waiting
// (until ctx ends) while it has none.
func (c *Cluster) StreamLeader(ctx context.Context, stream string) (int, error) {
	nc := c.Connect()
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return -1, err
	}
	for {
		try, cancel := context.WithTimeout(ctx, RequestTimeout)
		info, err := js.Stream(try, stream)
		cancel()
		if err == nil && info.CachedInfo().Cluster != nil {
			leader := info.CachedInfo().Cluster.Leader
			for i, n := range c.Nodes {
				if n.Name == leader && n.Running() {
					return i, nil
				}
			}
		}
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return -1, err
		}
		select {
		case <-ctx.Done():
			return -1, fmt.Errorf("stream %s has no leader: %w", stream, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// MoveStreamLeader makes node i the leader of stream: the leader steps
// down (through its server, whatever the account) until the election
// picks node i, or ctx ends.
func (c *Cluster) MoveStreamLeader(ctx context.Context, stream string, i int) error {
	for {
		leader, err := c.StreamLeader(ctx, stream)
		if err != nil {
			return err
		}
		if leader == i {
			return nil
		}
		srv := c.Nodes[leader].srv
		info, err := srv.Jsz(&server.JSzOptions{Accounts: true, Streams: true})
		if err != nil {
			return err
		}
		for _, acc := range info.AccountDetails {
			for _, s := range acc.Streams {
				if s.Name == stream {
					_ = srv.JetStreamStepdownStream(acc.Name, stream)
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s did not move to %s: %w", stream, c.Nodes[i].Name, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// StreamReplicas returns the configured replicas of stream.
func (c *Cluster) StreamReplicas(ctx context.Context, stream string) (int, error) {
	nc := c.Connect()
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return 0, err
	}
	s, err := Retry(ctx, func(ctx context.Context) (jetstream.Stream, error) { return js.Stream(ctx, stream) })
	if err != nil {
		return 0, err
	}
	return s.CachedInfo().Config.Replicas, nil
}

// WaitCurrent waits until every replica of stream is current with its
// leader (until ctx ends): a replica still catching up, after a scale-up
// say, cannot be elected.
func (c *Cluster) WaitCurrent(ctx context.Context, stream string) error {
	nc := c.Connect()
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	for {
		try, cancel := context.WithTimeout(ctx, RequestTimeout)
		s, err := js.Stream(try, stream)
		cancel()
		if err == nil {
			info := s.CachedInfo()
			current := info.Cluster != nil && info.Cluster.Leader != "" && len(info.Cluster.Replicas) == info.Config.Replicas-1
			for i := 0; current && i < len(info.Cluster.Replicas); i++ {
				r := info.Cluster.Replicas[i]
				current = r.Current && !r.Offline
			}
			if current {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("stream %s has replicas behind: %w", stream, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// LeasesLeaderAndFollower starts a three-node cluster and opens two engine
// logs on it: the first connected to the node leading the leases bucket,
// the second to another node, whose reads its own replica may answer
// first. Both close when the test ends.
func LeasesLeaderAndFollower(t testing.TB) [2]*events.Log {
	t.Helper()
	ctx := Context(t)
	c := StartCluster(t, filepath.Join(t.TempDir(), "creds"))
	open := func(url, name string) *events.Log {
		l, err := events.Open(ctx, events.Config{URL: url, NKeySeedFile: c.Creds.File(events.IdentityEngine),
			Redactor: &events.Redactor{}, Name: name})
		require.NoError(t, err)
		t.Cleanup(func() { _ = l.Close() })
		return l
	}
	open(c.URLs(), "provision")
	leader, err := c.StreamLeader(ctx, "KV_"+events.LeasesBucket)
	require.NoError(t, err)
	return [2]*events.Log{open(c.Nodes[leader].URL(), "e1"), open(c.Nodes[(leader+1)%len(c.Nodes)].URL(), "e2")}
}
