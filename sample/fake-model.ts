import { Injectable } from '@nestjs/common';

export interface Completion {
  text: string;
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
}

/**
 * A stand-in for a language model: it answers at once and reports the tokens it used, as the
 * real APIs do. A "token" here is a word; the reply is as long as the prompt, up to `maxTokens`.
 */
@Injectable()
export class FakeModel {
  complete(prompt: string, maxTokens: number): Promise<Completion> {
    const words = prompt.split(/\s+/).filter(Boolean);
    const completion = words.slice(0, maxTokens).reverse();
    const usage = {
      prompt_tokens: words.length,
      completion_tokens: completion.length,
      total_tokens: words.length + completion.length,
    };
    return Promise.resolve({ text: completion.join(' '), usage });
  }
}

/** What a call may use at most: the prompt, plus as many tokens as the reply may have. */
export function tokenEstimate(prompt: string, maxTokens: number): number {
  return prompt.split(/\s+/).filter(Boolean).length + maxTokens;
}
