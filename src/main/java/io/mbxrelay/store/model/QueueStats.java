package io.mbxrelay.store.model;

/**
 * Queue totals for the metrics gauges.
 *
 * @param items stored items, all targets and kinds
 * @param bytes stored wire bytes, all targets
 * @param largestTargetItems items of the target with the most items
 * @param largestTargetBytes bytes of the target with the most bytes
 */
public record QueueStats(long items, long bytes, long largestTargetItems, long largestTargetBytes) {}
