// The order of test files: vitest's own (failed first, then longest first, as it knows them), except that
// integration files needing nothing built besides the control plane come first, then those that need
// Velero, then those that need the node's builds, so that the run's set-up can build Velero and the node
// (prebuild.ts) while the first files run instead of before them; within a rank the slowest known files
// start first (lanes.ts).
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { needs, slowRank } from './lanes.ts';

const integrationProjects = new Set(['integration', 'node']);

export class BuildsLastSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const integration = sorted.filter((f) => integrationProjects.has(f.project.name));
    const rank = new Map(integration.map((f) => [f, needs(f.moduleId)]));
    // Array.prototype.sort is stable: within a rank, the slowest known files first, then vitest's order.
    // Other projects keep their places.
    const reordered = [...integration].sort(
      (a, b) => rank.get(a)! - rank.get(b)! || slowRank(a.moduleId) - slowRank(b.moduleId),
    );
    let next = 0;
    return sorted.map((f) => (integrationProjects.has(f.project.name) ? reordered[next++]! : f));
  }
}
