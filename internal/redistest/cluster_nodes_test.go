package redistest

import (
	"slices"
	"testing"
)

func TestKeySlot(t *testing.T) {
	tests := []struct {
		key  string
		want int
	}{
		{"123456789", 0x31C3}, // the CRC16/XMODEM check value
		{"foo", 12182},
		{"{user1000}.following", KeySlot("user1000")},
		{"foo{}{bar}", KeySlot("foo{}{bar}")}, // empty tag: the whole key
		{"foo{{bar}}zap", KeySlot("{bar")},
		{"foo{bar}{zap}", KeySlot("bar")},
		{"hopper:{b1}:units", KeySlot("b1")},
		{"", 0},
	}
	for _, tt := range tests {
		if got := KeySlot(tt.key); got != tt.want {
			t.Errorf("KeySlot(%q) = %d, want %d", tt.key, got, tt.want)
		}
	}
	if KeySlot("foo{}{bar}") == KeySlot("bar") {
		t.Errorf("KeySlot(foo{}{bar}) hashed the second tag")
	}
}

func TestParseClusterNodes(t *testing.T) {
	reply := `07c37dfeb235213a872192d90877d0cd55635b91 127.0.0.1:30004@31004,, slave e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 0 1426238317239 4 connected
67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1 127.0.0.1:30002@31002 master - 0 1426238316232 2 connected 5461-10922
292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f 127.0.0.1:30003@31003 master,fail? - 0 1426238318243 3 connected 10923-16383
e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 127.0.0.1:30001@31001 myself,master - 0 0 1 connected 0-5460 [5461-<-67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1] [17->-292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f]
6ec23923021cf3ffec47632106199cb7f496ce01 127.0.0.1:30005@31005 handshake - 0 0 0 connected`
	nodes, err := parseClusterNodes(reply)
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 5 {
		t.Fatalf("got %d nodes, want 5", len(nodes))
	}
	r, p2, p3, me, hs := nodes[0], nodes[1], nodes[2], nodes[3], nodes[4]
	if r.Primary || r.PrimaryID != me.ID || r.Addr != "127.0.0.1:30004" {
		t.Errorf("replica = %+v, want replica of %s at 127.0.0.1:30004", r, me.ID)
	}
	if !p2.Primary || !slices.Equal(p2.Slots, [][2]int{{5461, 10922}}) || p2.Failed {
		t.Errorf("primary 2 = %+v", p2)
	}
	if !p3.Failed {
		t.Errorf("primary 3 = %+v, want failed (fail?)", p3)
	}
	if !me.Myself || !slices.Equal(me.Slots, [][2]int{{0, 5460}}) ||
		me.Importing[5461] != p2.ID || me.Migrating[17] != p3.ID {
		t.Errorf("myself = %+v", me)
	}
	if !hs.Handshake {
		t.Errorf("handshake node = %+v", hs)
	}
	m, full := slotMap(nodes)
	if !full || m != "0-5460=127.0.0.1:30001 5461-10922=127.0.0.1:30002 10923-16383=127.0.0.1:30003 " {
		t.Errorf("slotMap = %q, %v; want the three ranges, full", m, full)
	}
	if _, full := slotMap(nodes[:2]); full {
		t.Errorf("slotMap of one primary: full, want not")
	}
}
