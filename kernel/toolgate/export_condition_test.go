package toolgate

// WithWhenFilesRead returns p with each when condition's file read as
// text, as LoadPolicy would have read it.
func WithWhenFilesRead(p Policy, text string) Policy {
	p.Tools = append([]Rule(nil), p.Tools...)
	for i := range p.Tools {
		if w := p.Tools[i].When; w != nil && w.File != "" {
			c := *w
			c.loaded = &text
			p.Tools[i].When = &c
		}
	}
	return p
}
