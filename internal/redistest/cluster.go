package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/redis/rueidis"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
	"github.com/testcontainers/testcontainers-go/wait"
)

// Defaults of ClusterOptions.
const (
	DefaultClusterPrimaries   = 3
	DefaultClusterNodeTimeout = 2 * time.Second
)

// ClusterOptions shape the cluster StartCluster runs. The zero value means
// DefaultClusterPrimaries primaries, no replica, DefaultClusterNodeTimeout.
type ClusterOptions struct {
	// Primaries is the number of primaries; the slots are split evenly
	// between them. Default DefaultClusterPrimaries.
	Primaries int
	// Replicas is the number of replicas of each primary. Default 0.
	Replicas int
	// NodeTimeout is cluster-node-timeout: how long a node may be
	// unreachable before the others fail it over. Default
	// DefaultClusterNodeTimeout.
	NodeTimeout time.Duration
}

func (o ClusterOptions) withDefaults() (ClusterOptions, error) {
	if o.Primaries == 0 {
		o.Primaries = DefaultClusterPrimaries
	}
	if o.NodeTimeout == 0 {
		o.NodeTimeout = DefaultClusterNodeTimeout
	}
	switch {
	case o.Primaries < 1 || o.Primaries > Slots:
		return o, fmt.Errorf("redistest: cluster of %d primaries", o.Primaries)
	case o.Replicas < 0:
		return o, fmt.Errorf("redistest: %d replicas per primary", o.Replicas)
	case o.NodeTimeout < 100*time.Millisecond:
		return o, fmt.Errorf("redistest: cluster node timeout %v is below 100ms", o.NodeTimeout)
	}
	return o, nil
}

// Cluster is a Redis Cluster of one container per node, every node on the
// host's network, listening and announcing 127.0.0.1 with a port of its own
// (and a cluster bus port of its own): every address a client is redirected
// to is on this machine's loopback.
//
// The nodes run the image and command of a single [Server]
// (HOPPER_REDIS_IMAGE, HOPPER_REDIS_CMD) with the cluster flags added, so
// the server matrix covers clusters too. Nothing persists: a node that is
// killed and started again comes back empty and rejoins as a replica.
//
// Its methods are safe for concurrent use, but the ones that change the
// topology (MigrateSlot, Failover, Kill, Revive) change it for every client.
type Cluster struct {
	docker *testcontainers.DockerClient

	mu    sync.Mutex
	nodes []*clusterNode // in start order: the first Primaries start as primaries
}

type clusterNode struct {
	addr  string // "127.0.0.1:port"
	bus   int    // cluster bus port
	ctr   *testcontainers.DockerContainer
	admin rueidis.Client // single-node client, default user
	down  bool           // killed by Kill, not yet revived
}

// StartCluster starts the nodes, assigns the slots evenly to the primaries,
// joins the nodes with CLUSTER MEET, attaches each primary's replicas with
// CLUSTER REPLICATE, and returns once every node agrees on who serves every
// slot. If it fails, it removes the nodes it started; otherwise the caller
// must call [Cluster.Terminate].
func StartCluster(ctx context.Context, opts ClusterOptions) (_ *Cluster, err error) {
	opts, err = opts.withDefaults()
	if err != nil {
		return nil, err
	}
	setEnvDefaults()
	docker, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrDockerUnavailable, err)
	}
	c := &Cluster{docker: docker}
	defer func() {
		if err != nil {
			_ = c.Terminate(context.WithoutCancel(ctx))
		}
	}()
	args, err := clusterBaseArgs(ctx, docker)
	if err != nil {
		return nil, err
	}

	total := opts.Primaries * (1 + opts.Replicas)
	c.nodes = make([]*clusterNode, total)
	errs := make([]error, total)
	var wg sync.WaitGroup
	for i := range total {
		wg.Go(func() { c.nodes[i], errs[i] = startNode(ctx, args, opts) })
	}
	wg.Wait()
	c.nodes = slices.DeleteFunc(c.nodes, func(n *clusterNode) bool { return n == nil })
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}

	// Slots first, so that every node's view has them once the gossip has
	// spread; then MEET, then the replicas.
	per := Slots / opts.Primaries
	for i, n := range c.nodes[:opts.Primaries] {
		first, last := i*per, (i+1)*per-1
		if i == opts.Primaries-1 {
			last = Slots - 1
		}
		cmd := n.admin.B().ClusterAddslotsrange().StartSlotEndSlot().StartSlotEndSlot(int64(first), int64(last)).Build()
		if err := n.admin.Do(ctx, cmd).Error(); err != nil {
			return nil, fmt.Errorf("redistest: CLUSTER ADDSLOTSRANGE %d %d on %s: %w", first, last, n.addr, err)
		}
	}
	seed := c.nodes[0]
	for _, n := range c.nodes[1:] {
		host, port, err := net.SplitHostPort(n.addr)
		if err != nil {
			return nil, err
		}
		cmd := seed.admin.B().Arbitrary("CLUSTER", "MEET", host, port, strconv.Itoa(n.bus)).Build()
		if err := seed.admin.Do(ctx, cmd).Error(); err != nil {
			return nil, fmt.Errorf("redistest: CLUSTER MEET %s from %s: %w", n.addr, seed.addr, err)
		}
	}
	if err := c.waitKnown(ctx); err != nil {
		return nil, err
	}
	for i, n := range c.nodes[opts.Primaries:] {
		primary := c.nodes[i%opts.Primaries]
		id, err := primary.myID(ctx)
		if err != nil {
			return nil, err
		}
		if err := n.admin.Do(ctx, n.admin.B().ClusterReplicate().NodeId(id).Build()).Error(); err != nil {
			return nil, fmt.Errorf("redistest: CLUSTER REPLICATE on %s of %s: %w", n.addr, primary.addr, err)
		}
	}
	if err := c.WaitStable(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// clusterBaseArgs returns the server's command before the cluster flags:
// HOPPER_REDIS_CMD, or, for an image whose ENTRYPOINT is the server, the
// flags of a single server.
func clusterBaseArgs(ctx context.Context, docker *testcontainers.DockerClient) ([]string, error) {
	img := Image()
	info, err := docker.ImageInspect(ctx, img)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return nil, fmt.Errorf("%w: %s", ErrImageMissing, img)
		}
		return nil, fmt.Errorf("redistest: inspect image %s: %w", img, err)
	}
	args, err := command()
	if err != nil || args != nil {
		return args, err
	}
	if info.Config == nil || len(info.Config.Entrypoint) == 0 {
		return nil, fmt.Errorf("redistest: image %s has no ENTRYPOINT: set HOPPER_REDIS_CMD to the server's command", img)
	}
	return []string{"--save", "", "--appendonly", "no", "--protected-mode", "no"}, nil
}

// startNode runs one cluster node on the host's network, on ports picked
// free here. A port taken meanwhile fails the start; a few tries follow.
func startNode(ctx context.Context, base []string, opts ClusterOptions) (*clusterNode, error) {
	var lastErr error
	for range 3 {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		bus, err := freePort()
		if err != nil {
			return nil, err
		}
		args := append(slices.Clone(base),
			"--bind", "127.0.0.1",
			"--port", strconv.Itoa(port),
			"--cluster-enabled", "yes",
			"--cluster-port", strconv.Itoa(bus),
			"--cluster-config-file", "/tmp/nodes-"+strconv.Itoa(port)+".conf",
			"--cluster-node-timeout", strconv.FormatInt(opts.NodeTimeout.Milliseconds(), 10),
			"--cluster-announce-ip", "127.0.0.1",
			// A primary down stops only its own slots, not the cluster.
			"--cluster-require-full-coverage", "no",
		)
		// ACL users are per node and not replicated: every node has
		// MinimalUser from its start, so a node started again has it
		// before any client reaches it.
		args = append(append(args, "--user", MinimalUser), minimalRules()...)
		ctr, err := runNode(ctx, args)
		if err == nil {
			n := &clusterNode{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), bus: bus, ctr: ctr}
			if err = waitPing(ctx, n.addr); err == nil {
				if n.admin, err = nodeClient(n.addr, rueidis.ClientOption{}); err == nil {
					return n, nil
				}
			}
		}
		lastErr = err
		if ctr != nil {
			_ = ctr.Terminate(context.WithoutCancel(ctx))
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("redistest: start cluster node (%s): %w", Image(), lastErr)
}

func runNode(ctx context.Context, args []string) (*testcontainers.DockerContainer, error) {
	ctx, cancel := context.WithTimeout(ctx, startLimit)
	defer cancel()
	return testcontainers.Run(ctx, Image(),
		testcontainers.WithLogger(tclog.NewNoopLogger()),
		testcontainers.WithLabels(map[string]string{Label: "true", Label + ".cluster": "true"}),
		testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) { hc.NetworkMode = "host" }),
		testcontainers.WithWaitStrategy(wait.ForLog(readyLog)),
		testcontainers.WithCmd(args...),
	)
}

// nodeClient connects to one node only, whatever the node serves.
func nodeClient(addr string, opt rueidis.ClientOption) (rueidis.Client, error) {
	opt.InitAddress = []string{addr}
	opt.ForceSingleClient = true
	opt.DisableCache = true
	c, err := rueidis.NewClient(opt)
	if err != nil {
		return nil, fmt.Errorf("redistest: connect to cluster node %s: %w", addr, err)
	}
	return c, nil
}

func (n *clusterNode) myID(ctx context.Context) (string, error) {
	id, err := n.admin.Do(ctx, n.admin.B().ClusterMyid().Build()).ToString()
	if err != nil {
		return "", fmt.Errorf("redistest: CLUSTER MYID on %s: %w", n.addr, err)
	}
	return id, nil
}

// view is the node's CLUSTER NODES.
func (n *clusterNode) view(ctx context.Context) ([]NodeInfo, error) {
	raw, err := n.admin.Do(ctx, n.admin.B().ClusterNodes().Build()).ToString()
	if err != nil {
		return nil, fmt.Errorf("redistest: CLUSTER NODES on %s: %w", n.addr, err)
	}
	// RESP3 answers a verbatim string, which rueidis gives with its format.
	return parseClusterNodes(strings.TrimPrefix(raw, "txt:"))
}

// live returns the nodes not killed.
func (c *Cluster) live() []*clusterNode {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*clusterNode
	for _, n := range c.nodes {
		if !n.down {
			out = append(out, n)
		}
	}
	return out
}

func (c *Cluster) node(addr string) (*clusterNode, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.nodes {
		if n.addr == addr {
			return n, nil
		}
	}
	return nil, fmt.Errorf("redistest: no cluster node %s", addr)
}

// Addrs returns the address of every node, "127.0.0.1:port", primaries and
// replicas alike, in start order (killed nodes included).
func (c *Cluster) Addrs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.addr
	}
	return out
}

// Client returns a rueidis cluster client for the code under test, seeded
// with every live node's address and closed by tb.Cleanup: as the default
// user, or as [MinimalUser] when HOPPER_TEST_ACL is non-empty (every node
// is started with that user). Client-side caching is off, as in
// [Server.Client].
func (c *Cluster) Client(tb testing.TB) rueidis.Client {
	tb.Helper()
	if os.Getenv("HOPPER_TEST_ACL") == "" {
		return c.connect(tb, rueidis.ClientOption{})
	}
	return c.connect(tb, rueidis.ClientOption{Username: MinimalUser, Password: MinimalUser})
}

// AdminClient returns a cluster client as the default user whatever
// HOPPER_TEST_ACL says, closed by tb.Cleanup: for setup and inspection.
func (c *Cluster) AdminClient(tb testing.TB) rueidis.Client {
	tb.Helper()
	return c.connect(tb, rueidis.ClientOption{})
}

// NodeClient returns a client of the one node addr (no redirects are
// followed), as the default user, closed by tb.Cleanup.
func (c *Cluster) NodeClient(tb testing.TB, addr string) rueidis.Client {
	tb.Helper()
	cl, err := nodeClient(addr, rueidis.ClientOption{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(cl.Close)
	return cl
}

func (c *Cluster) connect(tb testing.TB, opt rueidis.ClientOption) rueidis.Client {
	tb.Helper()
	for _, n := range c.live() {
		opt.InitAddress = append(opt.InitAddress, n.addr)
	}
	opt.DisableCache = true
	cl, err := rueidis.NewClient(opt)
	if err != nil {
		tb.Fatalf("redistest: connect to cluster %v as %q: %v", opt.InitAddress, userName(opt.Username), err)
	}
	if cl.Mode() != rueidis.ClientModeCluster {
		cl.Close()
		tb.Fatalf("redistest: client of %v is in mode %v, want cluster", opt.InitAddress, cl.Mode())
	}
	tb.Cleanup(cl.Close)
	return cl
}

// Nodes returns the cluster as the node addr sees it (CLUSTER NODES).
func (c *Cluster) Nodes(ctx context.Context, addr string) ([]NodeInfo, error) {
	n, err := c.node(addr)
	if err != nil {
		return nil, err
	}
	return n.view(ctx)
}

// Primaries returns the addresses of the primaries that serve slots, as
// the first live node sees them, sorted.
func (c *Cluster) Primaries(ctx context.Context) ([]string, error) {
	infos, err := c.anyView(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range infos {
		if n.Primary && !n.Failed && len(n.Slots) > 0 {
			out = append(out, n.Addr)
		}
	}
	slices.Sort(out)
	return out, nil
}

// PrimaryOf returns the address of the primary serving slot.
func (c *Cluster) PrimaryOf(ctx context.Context, slot int) (string, error) {
	infos, err := c.anyView(ctx)
	if err != nil {
		return "", err
	}
	for _, n := range infos {
		if !n.Primary || n.Failed {
			continue
		}
		for _, r := range n.Slots {
			if r[0] <= slot && slot <= r[1] {
				return n.Addr, nil
			}
		}
	}
	return "", fmt.Errorf("redistest: no primary serves slot %d", slot)
}

// ReplicasOf returns the addresses of the live replicas of primary.
func (c *Cluster) ReplicasOf(ctx context.Context, primary string) ([]string, error) {
	n, err := c.node(primary)
	if err != nil {
		return nil, err
	}
	infos, err := n.view(ctx)
	if err != nil {
		return nil, err
	}
	var id string
	for _, i := range infos {
		if i.Myself {
			id = i.ID
		}
	}
	var out []string
	for _, i := range infos {
		if !i.Primary && i.PrimaryID == id && !i.Failed && !i.Handshake {
			out = append(out, i.Addr)
		}
	}
	slices.Sort(out)
	return out, nil
}

func (c *Cluster) anyView(ctx context.Context) ([]NodeInfo, error) {
	var errs []error
	for _, n := range c.live() {
		infos, err := n.view(ctx)
		if err == nil {
			return infos, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("redistest: no node answers CLUSTER NODES: %w", errors.Join(errs...))
}

// waitKnown waits until every live node knows every other one, out of
// handshake.
func (c *Cluster) waitKnown(ctx context.Context) error {
	return c.poll(ctx, "every node knowing every other", func() error {
		live := c.live()
		for _, n := range live {
			infos, err := n.view(ctx)
			if err != nil {
				return err
			}
			known := 0
			for _, i := range infos {
				if !i.Handshake {
					known++
				}
			}
			if known < len(live) {
				return fmt.Errorf("%s knows %d of %d nodes", n.addr, known, len(live))
			}
		}
		return nil
	})
}

// WaitStable returns once every live node says cluster_state:ok, knows
// every live node, sees no live node failed, no slot migrating and no
// primary without slots (in these clusters, that is a node still turning
// into a replica after a failover), all agree on which primary serves
// every slot, and every replica's link to its primary is up.
func (c *Cluster) WaitStable(ctx context.Context) error {
	return c.poll(ctx, "the cluster to be stable", func() error {
		live := c.live()
		liveAddr := map[string]bool{}
		for _, n := range live {
			liveAddr[n.addr] = true
		}
		var first string
		for _, n := range live {
			state, err := n.admin.Do(ctx, n.admin.B().ClusterInfo().Build()).ToString()
			if err != nil {
				return err
			}
			if !strings.Contains(state, "cluster_state:ok") {
				return fmt.Errorf("%s: cluster_state not ok", n.addr)
			}
			infos, err := n.view(ctx)
			if err != nil {
				return err
			}
			seen := 0
			for _, i := range infos {
				if !liveAddr[i.Addr] {
					continue
				}
				seen++
				if i.Failed || i.Handshake {
					return fmt.Errorf("%s sees %s failed or in handshake", n.addr, i.Addr)
				}
				if len(i.Migrating)+len(i.Importing) > 0 {
					return fmt.Errorf("%s has slots migrating", i.Addr)
				}
				if i.Primary && len(i.Slots) == 0 {
					return fmt.Errorf("%s sees %s as a primary without slots (not yet a replica)", n.addr, i.Addr)
				}
			}
			if seen != len(live) {
				return fmt.Errorf("%s sees %d of the %d live nodes", n.addr, seen, len(live))
			}
			m, full := slotMap(infos)
			if !full {
				return fmt.Errorf("%s: not every slot is served: %s", n.addr, m)
			}
			if first == "" {
				first = m
			} else if m != first {
				return fmt.Errorf("nodes disagree on the slots: %s vs %s", first, m)
			}
			role, err := n.admin.Do(ctx, n.admin.B().Info().Section("replication").Build()).ToString()
			if err != nil {
				return err
			}
			if strings.Contains(role, "role:slave") && !strings.Contains(role, "master_link_status:up") {
				return fmt.Errorf("replica %s: link to its primary is down", n.addr)
			}
		}
		return nil
	})
}

// poll runs check every 50ms until it returns nil or ctx ends.
func (c *Cluster) poll(ctx context.Context, what string, check func() error) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		err := check()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redistest: waiting for %s: %w (last: %v)", what, ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// Terminate stops and removes every node. Clients still open fail from
// then on.
func (c *Cluster) Terminate(ctx context.Context) error {
	defer c.docker.Close()
	var errs []error
	for _, n := range c.nodes {
		if n == nil {
			continue
		}
		if n.admin != nil {
			n.admin.Close()
		}
		if err := n.ctr.Terminate(ctx); err != nil {
			errs = append(errs, fmt.Errorf("redistest: terminate cluster node %s (container %s): %w", n.addr, n.ctr.GetContainerID(), err))
		}
	}
	return errors.Join(errs...)
}

// Kill kills the node addr (SIGKILL): its data, never persisted, is lost.
// The others fail it over once NodeTimeout has passed without an answer:
// see [Cluster.WaitPromoted].
func (c *Cluster) Kill(ctx context.Context, addr string) error {
	n, err := c.node(addr)
	if err != nil {
		return err
	}
	if _, err := c.docker.ContainerKill(ctx, n.ctr.GetContainerID(), client.ContainerKillOptions{}); err != nil {
		return fmt.Errorf("redistest: kill cluster node %s: %w", addr, err)
	}
	c.mu.Lock()
	n.down = true
	c.mu.Unlock()
	return nil
}

// Revive starts a node stopped by Kill again. It keeps its node id (its
// nodes.conf survives in the container), comes back without data, learns
// from the others that its slots have a new primary and becomes its
// replica. Revive returns once the cluster is stable again.
func (c *Cluster) Revive(ctx context.Context, addr string) error {
	n, err := c.node(addr)
	if err != nil {
		return err
	}
	if _, err := c.docker.ContainerStart(ctx, n.ctr.GetContainerID(), client.ContainerStartOptions{}); err != nil {
		return fmt.Errorf("redistest: start cluster node %s: %w", addr, err)
	}
	if err := waitPing(ctx, addr); err != nil {
		return fmt.Errorf("redistest: revive %s: %w", addr, err)
	}
	c.mu.Lock()
	n.down = false
	c.mu.Unlock()
	return c.WaitStable(ctx)
}

// Failover moves primary's slots to one of its replicas with a manual
// failover (CLUSTER FAILOVER on the replica): the primary stops taking
// writes, the replica catches up with it, then takes over; nothing
// acknowledged is lost. The old primary becomes a replica of the new one.
// Failover returns the new primary's address once every node agrees.
func (c *Cluster) Failover(ctx context.Context, primary string) (string, error) {
	replicas, err := c.ReplicasOf(ctx, primary)
	if err != nil {
		return "", err
	}
	if len(replicas) == 0 {
		return "", fmt.Errorf("redistest: failover of %s: it has no live replica", primary)
	}
	r, err := c.node(replicas[0])
	if err != nil {
		return "", err
	}
	if err := r.admin.Do(ctx, r.admin.B().ClusterFailover().Build()).Error(); err != nil {
		return "", fmt.Errorf("redistest: CLUSTER FAILOVER on %s: %w", r.addr, err)
	}
	if err := c.waitPrimary(ctx, r); err != nil {
		return "", err
	}
	return r.addr, c.WaitStable(ctx)
}

// WaitPromoted waits until a replica of the killed primary old serves its
// slots in every live node's view, and returns its address. replicas are
// old's replicas as they were before the kill (see ReplicasOf).
func (c *Cluster) WaitPromoted(ctx context.Context, replicas []string) (string, error) {
	var promoted string
	err := c.poll(ctx, "a replica's promotion", func() error {
		for _, addr := range replicas {
			n, err := c.node(addr)
			if err != nil {
				return err
			}
			infos, err := n.view(ctx)
			if err != nil {
				continue
			}
			for _, i := range infos {
				if i.Myself && i.Primary && len(i.Slots) > 0 {
					promoted = addr
					return nil
				}
			}
		}
		return errors.New("no replica is primary yet")
	})
	if err != nil {
		return "", err
	}
	n, err := c.node(promoted)
	if err != nil {
		return "", err
	}
	return promoted, c.waitPrimary(ctx, n)
}

// waitPrimary waits until every live node sees n as a primary with slots.
func (c *Cluster) waitPrimary(ctx context.Context, n *clusterNode) error {
	id, err := n.myID(ctx)
	if err != nil {
		return err
	}
	return c.poll(ctx, n.addr+" serving as primary", func() error {
		for _, m := range c.live() {
			infos, err := m.view(ctx)
			if err != nil {
				return err
			}
			for _, i := range infos {
				if i.ID == id && !(i.Primary && len(i.Slots) > 0) {
					return fmt.Errorf("%s does not see %s as a primary with slots yet", m.addr, n.addr)
				}
			}
		}
		return nil
	})
}

// Migration is a slot being moved from one primary to another, in the
// steps redis-cli --cluster reshard takes: the target IMPORTING, the source
// MIGRATING, the keys moved by MIGRATE, then the slot given to the target
// on every primary. Between BeginMigration and Finish, commands on the
// slot's keys still on the source are served there; the others get ASK
// (to the target) or, for several keys some of which moved, TRYAGAIN.
type Migration struct {
	c              *Cluster
	Slot           int
	From, To       string // addresses
	fromID, toID   string
	toHost, toPort string
	finished       bool
}

// BeginMigration opens the migration of slot from the primary that serves
// it to the primary to: nothing is moved yet.
func (c *Cluster) BeginMigration(ctx context.Context, slot int, to string) (*Migration, error) {
	from, err := c.PrimaryOf(ctx, slot)
	if err != nil {
		return nil, err
	}
	if from == to {
		return nil, fmt.Errorf("redistest: slot %d is already on %s", slot, to)
	}
	src, err := c.node(from)
	if err != nil {
		return nil, err
	}
	dst, err := c.node(to)
	if err != nil {
		return nil, err
	}
	m := &Migration{c: c, Slot: slot, From: from, To: to}
	if m.fromID, err = src.myID(ctx); err != nil {
		return nil, err
	}
	if m.toID, err = dst.myID(ctx); err != nil {
		return nil, err
	}
	if m.toHost, m.toPort, err = net.SplitHostPort(to); err != nil {
		return nil, err
	}
	s := int64(slot)
	if err := dst.admin.Do(ctx, dst.admin.B().ClusterSetslot().Slot(s).Importing().NodeId(m.fromID).Build()).Error(); err != nil {
		return nil, fmt.Errorf("redistest: CLUSTER SETSLOT %d IMPORTING on %s: %w", slot, to, err)
	}
	if err := src.admin.Do(ctx, src.admin.B().ClusterSetslot().Slot(s).Migrating().NodeId(m.toID).Build()).Error(); err != nil {
		return nil, fmt.Errorf("redistest: CLUSTER SETSLOT %d MIGRATING on %s: %w", slot, from, err)
	}
	return m, nil
}

// MoveKeys moves up to n of the slot's keys still on the source (all of
// them when n <= 0) with MIGRATE, and returns how many it moved.
func (m *Migration) MoveKeys(ctx context.Context, n int) (int, error) {
	src, err := m.c.node(m.From)
	if err != nil {
		return 0, err
	}
	moved := 0
	for n <= 0 || moved < n {
		batch := int64(100)
		if n > 0 {
			batch = int64(min(100, n-moved))
		}
		keys, err := src.admin.Do(ctx, src.admin.B().ClusterGetkeysinslot().Slot(int64(m.Slot)).Count(batch).Build()).AsStrSlice()
		if err != nil {
			return moved, fmt.Errorf("redistest: CLUSTER GETKEYSINSLOT %d on %s: %w", m.Slot, m.From, err)
		}
		if len(keys) == 0 {
			return moved, nil
		}
		cmd := src.admin.B().Migrate().Host(m.toHost).Port(mustAtoi(m.toPort)).Key("").DestinationDb(0).Timeout(5000).Keys(keys...).Build()
		err = src.admin.Do(ctx, cmd).Error()
		if err != nil && !strings.Contains(err.Error(), "NOKEY") { // NOKEY: all expired or deleted meanwhile
			return moved, fmt.Errorf("redistest: MIGRATE %d keys of slot %d from %s to %s: %w", len(keys), m.Slot, m.From, m.To, err)
		}
		moved += len(keys)
	}
	return moved, nil
}

// Finish moves the keys left and gives the slot to the target on the
// target, the source and every other primary, then waits until the cluster
// is stable. Once it has succeeded, Finish does nothing. A Migration is not
// safe for concurrent use.
func (m *Migration) Finish(ctx context.Context) error {
	if m.finished {
		return nil
	}
	if _, err := m.MoveKeys(ctx, 0); err != nil {
		return err
	}
	dst, err := m.c.node(m.To)
	if err != nil {
		return err
	}
	src, err := m.c.node(m.From)
	if err != nil {
		return err
	}
	order := []*clusterNode{dst, src}
	primaries, err := m.c.Primaries(ctx)
	if err != nil {
		return err
	}
	for _, p := range primaries {
		if p != m.To && p != m.From {
			n, err := m.c.node(p)
			if err != nil {
				return err
			}
			order = append(order, n)
		}
	}
	for _, n := range order {
		cmd := n.admin.B().ClusterSetslot().Slot(int64(m.Slot)).Node().NodeId(m.toID).Build()
		if err := n.admin.Do(ctx, cmd).Error(); err != nil {
			return fmt.Errorf("redistest: CLUSTER SETSLOT %d NODE %s on %s: %w", m.Slot, m.To, n.addr, err)
		}
	}
	m.finished = true
	return m.c.WaitStable(ctx)
}

// MigrateSlot moves slot, with its keys, to the primary to.
func (c *Cluster) MigrateSlot(ctx context.Context, slot int, to string) error {
	m, err := c.BeginMigration(ctx, slot, to)
	if err != nil {
		return err
	}
	return m.Finish(ctx)
}

func mustAtoi(s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		panic(fmt.Sprintf("redistest: port %q: %v", s, err))
	}
	return n
}
