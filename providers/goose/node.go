package goose

import (
	"bytes"

	"go.yaml.in/yaml/v3"
)

// mapping builds a block mapping, key by key.
type mapping struct {
	n yaml.Node
}

func (m *mapping) add(key string, value *yaml.Node) {
	m.n.Kind = yaml.MappingNode
	addPair(&m.n, key, value)
}

// bytes writes the mapping as YAML, indented by two spaces.
func (m *mapping) bytes() []byte {
	return encode(&m.n)
}

func addPair(m *yaml.Node, key string, value *yaml.Node) {
	if value.Kind == yaml.MappingNode && len(value.Content) == 0 {
		value.Style = yaml.FlowStyle // {}
	}
	if m.Kind == yaml.MappingNode && m.Style == yaml.FlowStyle {
		m.Style = 0 // it has a pair now
	}
	m.Content = append(m.Content, str(key), value)
}

// encode writes n as a YAML document, indented by two spaces. It cannot fail on the nodes
// this package builds.
func encode(n *yaml.Node) []byte {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(n); err != nil {
		panic("goose: encoding YAML: " + err.Error())
	}
	_ = enc.Close()
	return b.Bytes()
}

func str(s string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
}
