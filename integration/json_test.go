package integration

import (
	"bytes"
	"encoding/json"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// keyOrder returns the top-level keys of a JSON object in the order written.
func keyOrder(t testing.TB, raw string) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
	tok, err := dec.Token()
	require.NoError(t, err)
	require.Equal(t, json.Delim('{'), tok)
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		require.NoError(t, err)
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		require.NoError(t, dec.Decode(&skip))
	}
	return keys
}

func regexpQuote(s string) string { return regexp.QuoteMeta(s) }
