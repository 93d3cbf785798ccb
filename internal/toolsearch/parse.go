package toolsearch

import (
	"errors"
	"slices"

	json "github.com/goccy/go-json"
)

// Parse reads what search needs of a tool as a server lists it: its
// name, title (or annotations' title), description, and its input
// schema's properties with their descriptions, in name order.
func Parse(raw json.RawMessage) (Tool, error) {
	var t struct {
		Name        string `json:"name"`
		Title       string `json:"title"`
		Description string `json:"description"`
		Annotations struct {
			Title string `json:"title"`
		} `json:"annotations"`
		InputSchema struct {
			Properties map[string]struct {
				Description string `json:"description"`
			} `json:"properties"`
		} `json:"inputSchema"`
	}
	if err := json.Unmarshal(raw, &t); err != nil {
		return Tool{}, err
	}
	if t.Name == "" {
		return Tool{}, errors.New("a tool without a name")
	}
	tool := Tool{Name: t.Name, Title: t.Title, Description: t.Description}
	if tool.Title == "" {
		tool.Title = t.Annotations.Title
	}
	for name, p := range t.InputSchema.Properties {
		tool.Params = append(tool.Params, Param{Name: name, Description: p.Description})
	}
	slices.SortFunc(tool.Params, func(a, b Param) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return tool, nil
}
