// Report exports, four at a time, from code: six jobs at once all finish, never more than four
// rendering together.
import { Injectable, Module } from '@nestjs/common';
import { RateLimitModule } from 'nest-rate-limit';
import { ReportExporter, Reports } from './report-exporter.js';
import { assert, atOnce, type ProviderScenario } from './support.js';

/** The recipe's Reports, counting how many render at once. */
@Injectable()
class WatchedReports extends Reports {
  running = 0;
  mostAtOnce = 0;

  override async render(id: string) {
    this.mostAtOnce = Math.max(this.mostAtOnce, ++this.running);
    try {
      return await super.render(id);
    } finally {
      this.running--;
    }
  }
}

@Module({
  imports: [RateLimitModule.forRoot()],
  providers: [ReportExporter, { provide: Reports, useClass: WatchedReports }],
})
class ExportsApp {}

export const scenario: ProviderScenario = {
  kind: 'providers',
  module: ExportsApp,
  async run(app) {
    const exporter = app.get(ReportExporter);
    const done = await atOnce(6, (i) => exporter.export(`r-${i}`));
    assert.deepEqual(
      done.map((report) => report.url),
      ['/r-0.csv', '/r-1.csv', '/r-2.csv', '/r-3.csv', '/r-4.csv', '/r-5.csv'],
    );
    assert.equal((app.get(Reports) as WatchedReports).mostAtOnce, 4);
  },
};
