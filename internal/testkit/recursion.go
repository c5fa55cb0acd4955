package testkit

// EndlessJob is the YAML of job endless, which passes the load check (its
// invocation of itself has a condition) but never stops invoking itself:
// only engine.max_child_depth ends it.
const EndlessJob = `
schemaVersion: 2
kind: Job
metadata: {name: endless}
spec:
  default_input: {more: yes}
  steps:
    - id: again
      when: "{{ input.more }} == yes"
      spec: {type: deterministic, action: job.invoke, config: {job: endless}}
`
