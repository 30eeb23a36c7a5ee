package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// checkOutput refuses an -o value that is not "" (text) or one of
// allowed, naming them.
func checkOutput(format string, allowed ...string) error {
	if format == "" || slices.Contains(allowed, format) {
		return nil
	}
	return fmt.Errorf("invalid output format %q: one of %s", format, strings.Join(allowed, ", "))
}

// printAs writes v as JSON (indented) or YAML, as -o json|yaml asks.
func printAs(w io.Writer, format string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err == nil && format == "yaml" {
		b, err = yaml.JSONToYAML(b)
	}
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", bytes.TrimSpace(b))
	return err
}
