import { Body, Controller, type ExecutionContext, Headers, Post } from '@nestjs/common';
import { RateLimit, type RateLimitPolicy, RateLimitService, requestOf } from 'nest-rate-limit';
import { type Completion, FakeModel, tokenEstimate } from './fake-model.js';

interface ChatRequest {
  prompt?: string;
  max_tokens?: number;
}

const user = (ctx: ExecutionContext) =>
  requestOf<{ headers: Record<string, string> }>(ctx)?.headers['x-user'];
const body = (ctx: ExecutionContext) => requestOf<{ body?: ChatRequest }>(ctx)?.body ?? {};
const maxTokensOf = (request: ChatRequest) => Math.min(request.max_tokens ?? 256, 4096);

/** 10,000 tokens per user per day, from midnight UTC: a calendar quota counts in fixed windows. */
const TOKENS_PER_DAY = {
  name: 'tokens',
  calendar: 'day',
  threshold: 10_000,
} as const satisfies RateLimitPolicy;

/**
 * Limits a model by the tokens each user spends, not by calls. The estimate (the prompt plus
 * `max_tokens`) is taken when a request arrives; once the model has answered, what it reports
 * having used is charged instead. Try it, then look at `RateLimit`'s `r`:
 * curl -si localhost:3000/chat/completions -H 'X-User: ada' -H 'Content-Type: application/json' -d '{"prompt":"hello there model","max_tokens":500}'
 */
@Controller('chat')
export class ChatController {
  constructor(
    private readonly model: FakeModel,
    private readonly rateLimit: RateLimitService,
  ) {}

  @RateLimit({
    ...TOKENS_PER_DAY,
    tracker: user,
    cost: (ctx) => tokenEstimate(body(ctx).prompt ?? '', maxTokensOf(body(ctx))),
    settle: (_ctx, reply: Completion) => reply.usage.total_tokens,
  })
  @Post('completions')
  complete(@Body() request: ChatRequest): Promise<Completion> {
    return this.model.complete(request.prompt ?? '', maxTokensOf(request));
  }

  /**
   * The same budget, spent from code rather than a route: `run` reserves the estimate, makes the
   * call, and settles what the reply says it used. Another budget than the route's (its key is
   * the one given here); over it, `run` throws a `RateLimitException`, answered 429.
   */
  @Post('summaries')
  summarize(@Headers('x-user') userId: string, @Body() request: ChatRequest): Promise<Completion> {
    const prompt = `summarise: ${request.prompt ?? ''}`;
    const maxTokens = maxTokensOf(request);
    return this.rateLimit.run(
      `summaries:${userId || 'anonymous'}`,
      TOKENS_PER_DAY,
      () => this.model.complete(prompt, maxTokens),
      { cost: tokenEstimate(prompt, maxTokens), maxWait: 0, usage: (r) => r.usage.total_tokens },
    );
  }
}
