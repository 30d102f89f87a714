package redistest

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Slots is the number of hash slots of a Redis Cluster.
const Slots = 16384

// KeySlot returns the hash slot of key as Redis Cluster computes it: CRC16
// (XMODEM) of the key's hash tag, the part between the first '{' and the
// next '}' when that part is not empty, else of the whole key, modulo 16384.
func KeySlot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for k := 0; k < len(key); k++ {
		crc ^= uint16(key[k]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % Slots
}

// NodeInfo is one line of CLUSTER NODES: a node as some node sees it.
type NodeInfo struct {
	ID   string
	Addr string // "ip:port" as announced
	// Primary is true for a primary; PrimaryID names a replica's primary.
	Primary   bool
	PrimaryID string
	Myself    bool
	// Failed: flagged fail or fail? (the seeing node thinks it is down).
	Failed bool
	// Handshake: not yet part of the cluster (handshake or noaddr).
	Handshake bool
	// Slots are the inclusive slot ranges the node serves, as [first, last].
	Slots [][2]int
	// Migrating and Importing are the open slot migrations, only listed on
	// the seeing node's own line: slot -> the other node's id.
	Migrating, Importing map[int]string
}

// parseClusterNodes parses a CLUSTER NODES reply.
func parseClusterNodes(reply string) ([]NodeInfo, error) {
	var out []NodeInfo
	for _, line := range strings.Split(strings.TrimSpace(reply), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			return nil, fmt.Errorf("redistest: CLUSTER NODES line %q: want at least 8 fields", line)
		}
		n := NodeInfo{ID: f[0], PrimaryID: f[3]}
		if n.PrimaryID == "-" {
			n.PrimaryID = ""
		}
		// ip:port@cport[,hostname[,aux=value]...]
		addr := f[1]
		if i := strings.IndexAny(addr, "@,"); i >= 0 {
			addr = addr[:i]
		}
		n.Addr = addr
		for _, flag := range strings.Split(f[2], ",") {
			switch flag {
			case "myself":
				n.Myself = true
			case "master":
				n.Primary = true
			case "fail", "fail?":
				n.Failed = true
			case "handshake", "noaddr":
				n.Handshake = true
			}
		}
		for _, s := range f[8:] {
			if strings.HasPrefix(s, "[") {
				// [slot->-id] migrating to id, [slot-<-id] importing from id.
				body := strings.Trim(s, "[]")
				if slot, id, ok := strings.Cut(body, "->-"); ok {
					n.Migrating = setSlot(n.Migrating, slot, id)
				} else if slot, id, ok := strings.Cut(body, "-<-"); ok {
					n.Importing = setSlot(n.Importing, slot, id)
				}
				continue
			}
			first, last, isRange := strings.Cut(s, "-")
			a, err := strconv.Atoi(first)
			if err != nil {
				return nil, fmt.Errorf("redistest: CLUSTER NODES slot %q in %q", s, line)
			}
			b := a
			if isRange {
				if b, err = strconv.Atoi(last); err != nil {
					return nil, fmt.Errorf("redistest: CLUSTER NODES slot %q in %q", s, line)
				}
			}
			n.Slots = append(n.Slots, [2]int{a, b})
		}
		out = append(out, n)
	}
	return out, nil
}

func setSlot(m map[int]string, slot, id string) map[int]string {
	s, err := strconv.Atoi(slot)
	if err != nil {
		return m
	}
	if m == nil {
		m = map[int]string{}
	}
	m[s] = id
	return m
}

// slotMap renders who serves which slots, as seen in nodes: "first-last=addr"
// sorted by slot, and whether all slots are served.
func slotMap(nodes []NodeInfo) (string, bool) {
	type span struct {
		first, last int
		addr        string
	}
	var spans []span
	for _, n := range nodes {
		if !n.Primary {
			continue
		}
		for _, r := range n.Slots {
			spans = append(spans, span{r[0], r[1], n.Addr})
		}
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].first < spans[j].first })
	var b strings.Builder
	next := 0
	for _, s := range spans {
		if s.first != next {
			next = -1
		}
		if next >= 0 {
			next = s.last + 1
		}
		fmt.Fprintf(&b, "%d-%d=%s ", s.first, s.last, s.addr)
	}
	return b.String(), next == Slots
}
