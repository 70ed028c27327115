package mcp

// ParamHeaders is Proxy.ParamHeaders for a namespaced tool: the
// x-mcp-header annotations its server listed for it, which a request's
// Mcp-Param-* headers must agree with (CheckHeaders); none for a name
// that is not server__tool or a server the Mux does not serve.
func (m *Mux) ParamHeaders(name string) []ParamHeader {
	server, tool, ok := m.Split(name)
	if !ok {
		return nil
	}
	p := m.Proxy(server)
	if p == nil {
		return nil
	}
	return p.ParamHeaders(tool)
}
