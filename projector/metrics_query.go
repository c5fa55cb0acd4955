package projector

import (
	"context"
	"errors"
	"fmt"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// Metrics returns every counter of the metrics view, as of the last
// committed batch. The maps are never nil. A key of the metrics bucket that
// no group claims, or a record that does not decode, is an error: the
// views file is damaged, and Replay repairs it.
func (p *Projector) Metrics(ctx context.Context) (*Metrics, error) {
	m := newMetrics()
	err := p.read(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketMetrics)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, raw []byte) error {
			if err := addMetric(m, string(k), raw); err != nil {
				return fmt.Errorf("projector: metrics %q: %w", k, err)
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// newMetrics returns empty metrics, no map nil.
func newMetrics() *Metrics {
	return &Metrics{
		Models: map[string]ModelMetrics{},
		Tools:  map[string]ToolMetrics{},
		Steps:  map[string]map[string]StepMetrics{},
		Jobs:   map[string]JobMetrics{},

		ActivityTypes: map[string]ActivityTypeMetrics{},

		Checkpoints: map[string]map[string]CheckpointMetrics{},
		Verifier:    map[string]VerifierMetrics{},
		Tasks:       map[string]TaskMetrics{},
	}
}

// addMetric adds the record stored under key to m.
func addMetric(m *Metrics, key string, raw []byte) error {
	for _, g := range metricsGroups {
		if rest, ok := strings.CutPrefix(key, g.prefix); ok {
			return g.add(m, rest, raw)
		}
	}
	return errors.New("no metrics group has this key")
}
