package jsonfile

import (
	"bytes"
	"regexp"

	json "github.com/goccy/go-json"
)

var fingerprintMask = regexp.MustCompile(`sha256:[0-9a-f]{12}`)

func compact(dst *bytes.Buffer, src []byte) error { return json.Compact(dst, src) }
