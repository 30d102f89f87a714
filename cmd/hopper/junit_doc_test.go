package main

import (
	"encoding/xml"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// readJUnit parses a JUnit file the report wrote.
func readJUnit(t testing.TB, path string) junitDoc {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var doc junitDoc
	require.NoError(t, xml.Unmarshal(raw, &doc), "JUnit is well-formed XML:\n%s", raw)
	return doc
}
