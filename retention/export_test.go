package retention

// SetAfterExport has f called between each pass's export and its first
// record.
func (c *Collector) SetAfterExport(f func()) { c.afterExport = f }
