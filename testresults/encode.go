package testresults

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// Bounds of Encode: what an attempt's results may take in Redis, beside an
// attempt log whose events stay small.
const (
	// DefaultLimit is the size Encode keeps an attempt's results within.
	DefaultLimit = 64 << 10
	// failedOutputBytes is the tail of a failed test's output kept at
	// first; squeezed to squeezedOutputBytes when the cases do not fit.
	failedOutputBytes   = 4 << 10
	squeezedOutputBytes = 256
)

// stored is an attempt's results as kept: the cases, and how many were left
// out to fit.
type stored struct {
	Cases   []Case `json:"cases"`
	Omitted int    `json:"omitted,omitempty"`
}

// Encode returns cases as JSON of at most limit bytes (DefaultLimit when
// limit <= 0), keeping what a report needs most: every case's name and
// status; the output of failed cases only, cut to its tail; then, if that
// is still too big, failed outputs cut shorter, then passed and skipped
// cases left out (counted), then failed ones. nil for no cases.
func Encode(cases []Case, limit int) []byte {
	if len(cases) == 0 {
		return nil
	}
	if limit <= 0 {
		limit = DefaultLimit
	}
	kept := make([]Case, len(cases))
	for i, c := range cases {
		if c.Failed() {
			c.Output = tailOf(c.Output, failedOutputBytes)
		} else {
			c.Output = ""
		}
		kept[i] = c
	}
	s := stored{Cases: kept}
	if b := encodeStored(s); len(b) <= limit {
		return b
	}
	for i := range s.Cases {
		s.Cases[i].Output = tailOf(s.Cases[i].Output, squeezedOutputBytes)
	}
	// Leave cases out from the end, passes before failures, counting each
	// case's own encoded size rather than encoding the whole again.
	size := make([]int, len(s.Cases))
	total := len(`{"cases":[],"omitted":}`) + 20
	for i, c := range s.Cases {
		b, _ := json.Marshal(c)
		size[i] = len(b) + 1
		total += size[i]
	}
	keep := make([]bool, len(s.Cases))
	for i := range keep {
		keep[i] = true
	}
	for _, failed := range []bool{false, true} {
		for i := len(s.Cases) - 1; i >= 0 && total > limit; i-- {
			if keep[i] && s.Cases[i].Failed() == failed {
				keep[i], total = false, total-size[i]
				s.Omitted++
			}
		}
	}
	fitting := s.Cases[:0]
	for i, c := range s.Cases {
		if keep[i] {
			fitting = append(fitting, c)
		}
	}
	s.Cases = fitting
	return encodeStored(s)
}

// Decode reads what Encode wrote: the cases and how many were left out.
func Decode(b []byte) (cases []Case, omitted int, err error) {
	var s stored
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, 0, fmt.Errorf("testresults: stored results: %w", err)
	}
	return s.Cases, s.Omitted, nil
}

func encodeStored(s stored) []byte {
	b, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("testresults: encoding cases: %v", err)) // strings and numbers always encode
	}
	return b
}

// tailOf is the last n bytes of s, cut on a UTF-8 boundary.
func tailOf(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := len(s) - n
	for cut < len(s) && !utf8.RuneStart(s[cut]) {
		cut++
	}
	return "..." + s[cut:]
}
