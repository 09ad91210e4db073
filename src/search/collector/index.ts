// The search collector: a live cluster's objects, as index batches.
export { Collector, type CollectorOptions, type CollectorStats } from './collector.ts';
export { type DiscoverOptions, type Discovery, discover } from './discovery.ts';
export { collectorRules } from './rules.ts';
export { parseSensitiveField, type SensitiveField, SensitiveFieldError } from './sensitive.ts';
export { type TransformContext, toIndexed } from './transform.ts';
