package retention

// SetAfterSelect has f called between each pass's selection and its
// export.
func (c *Collector) SetAfterSelect(f func()) { c.afterSelect = f }
