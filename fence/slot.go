package fence

import (
	"fmt"
	"strconv"
	"sync"
)

// SlotCount is the number of hash slots in a Redis Cluster.
const SlotCount = 16384

// Slot returns the Redis Cluster hash slot of key: CRC16 (XMODEM) of its hash
// tag when it has one, of the whole key otherwise, modulo SlotCount.
func Slot(key string) int {
	if tag, ok := hashTag(key); ok {
		key = tag
	}
	return int(crc16(key) % SlotCount)
}

// hashTag returns the part of key between the first '{' and the next '}',
// when that part is not empty: the only part Redis Cluster hashes.
func hashTag(key string) (string, bool) {
	for i := 0; i < len(key); i++ {
		if key[i] != '{' {
			continue
		}
		for j := i + 1; j < len(key); j++ {
			if key[j] == '}' {
				if j == i+1 {
					return "", false
				}
				return key[i+1 : j], true
			}
		}
		return "", false
	}
	return "", false
}

var (
	slotTagsOnce sync.Once
	slotTags     [SlotCount]string
)

// TagForSlot returns a short string that hashes to slot. The table is built
// once, on first use, by trying "s0", "s1", ... until every slot has one.
// A slot outside 0..SlotCount-1 has no tag and panics, naming it: a tag for
// another slot would scatter keys meant to share one. Safe for concurrent
// use.
func TagForSlot(slot int) string {
	if slot < 0 || slot >= SlotCount {
		panic(fmt.Sprintf("fence: slot %d is out of range [0, %d)", slot, SlotCount))
	}
	slotTagsOnce.Do(func() {
		left := SlotCount
		for n := 0; left > 0; n++ {
			tag := "s" + strconv.Itoa(n)
			s := crc16(tag) % SlotCount
			if slotTags[s] == "" {
				slotTags[s] = tag
				left--
			}
		}
	})
	return slotTags[slot]
}

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial value 0), the checksum
// Redis Cluster uses for key slots.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for b := 0; b < 8; b++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}
