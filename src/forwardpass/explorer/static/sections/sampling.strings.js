// §03 What comes out: logits and sampling. Every word of the section, [English, Chinese]. Sentences that carry a
// number (the *.told keys) are filled in from the same result the widget draws.

import { plural } from "../lib/i18n.js";

export default {
  "title-s03": ["3. What comes out: logits and sampling", "3. 输出：logits 与采样"],
  "intro-s03": [
    "What leaves the stack of blocks is not a word. The final norm and the unembedding turn the stream at the last position into one number for every entry of the vocabulary: a score, called a logit, for how strongly the model puts that entry forward as the next token. That list of scores is all the model answers. Everything after it is choosing: deciding which one entry is written next, and this section is about how that choice is made. We follow one example, <tok>{story} ___</tok>: a toy with five candidates and made-up scores first, then the same five words on the model loaded here.",
    "从这摞块里出来的不是一个词。最终归一化和反嵌入把最后一个位置上的残差流变成一串数，词表里每一项各一个：这个分数叫 logit，表示模型有多想让这一项当下一个词元。这串分数就是模型的全部回答。之后的一切都是在做选择：到底把哪一项写成下一个词元。这一节讲的就是这个选择怎么做。我们沿用一个例子：<tok>“{story}___”</tok>。先看分数是编出来的五个候选（玩具例子），再看本页加载的模型怎样给同样这五个词打分。",
  ],
  "bridge-s03": [
    "However it is chosen, greedy or drawn, the result is one token. The next section takes that token, appends it to the input and runs the same forward pass again, one token longer. Choosing one token and feeding it back is the whole loop.",
    "不管是怎么选出来的，贪心也好，抽出来的也好，结果都只是一个词元。下一节把这个词元接到输入后面，再把同一次前向传播跑一遍，输入长了一个词元。选出一个词元、再把它喂回去，这就是整个循环。",
  ],

  // shared by the section's widgets
  "sampling.runs-on": ["The toy example's five scores are made up and fixed; the real model's top 10 follow the prompt at the top, on {model}.",
    "玩具例子的五个分数是编出来的，固定不变；真实模型的前 10 名跟随页面顶部的提示词，在 {model} 上计算。"],
  "sampling.toy": ["the toy example", "玩具例子"],
  "sampling.real": ["the real model's top 10, your prompt", "真实模型的前 10 名（你的提示词）"],
  "s03.presets": ["Presets:", "预设："],
  "s03.chart-empty": ["a chart, drawn once its result is here", "图表：结果一到就画出来"],
  "s03.axis.probability": ["probability", "概率"],
  "s03.axis.logit": ["logit (raw score)", "logit（原始分数）"],
  "s03.number.0": ["none", "零"],
  "s03.number.1": ["one", "一"],
  "s03.number.2": ["two", "两"],
  "s03.number.3": ["three", "三"],
  "s03.number.4": ["four", "四"],
  "s03.number.5": ["five", "五"],
  "s03.number.6": ["six", "六"],
  "s03.number.7": ["seven", "七"],
  "s03.number.8": ["eight", "八"],
  "s03.number.9": ["nine", "九"],
  "s03.number.10": ["ten", "十"],
  "error.sample_window": ["the sample goes at one of the first {n} steps (the window's first half)",
    "采样只能放在前 {n} 步中的某一步（窗口的前一半）"],

  // W-logits
  "title-W-logits": ["Raw scores, before anything changes them", "原始分数：还没有任何东西动过它们"],
  "W-logits.runs-on": ["The toy example's five scores are made up and fixed; the real model's are its scores after the toy's own sentence (not the prompt at the top), on {model}.",
    "玩具例子的五个分数是编出来的，固定不变；真实模型的分数是它在玩具例子那句话之后打的分（不是页面顶部的提示词），在 {model} 上计算。"],
  "before-W-logits": [
    "The first chart is the toy example: five candidates for the blank, each with a made-up score. The second is the same five words scored by the model on this page after the same words, with each one's rank among all the tokens the model knows. The third shows the tokens the model itself scores highest there. Compare the orders, and look at who leads.",
    "第一张图是玩具例子：横线处的五个候选，各有一个编出来的分数。第二张是本页的模型在同一句话后面给这五个词打的分，以及每个词在模型认识的全部词元里排第几。第三张是模型自己在那里打分最高的几个词元。比较这几份次序，看看谁领先。",
  ],
  "after-W-logits": [
    "A logit has no fixed scale: only the differences between scores matter, which is why the toy's small numbers and the model's larger ones can tell the same story. Softmax, next, turns those differences into probabilities.",
    "logit 没有固定的刻度：有意义的只是分数之间的差，所以玩具例子的小数字和模型的大数字讲得出同一个故事。下一步，softmax 把这些差变成概率。",
  ],
  "W-logits.toy": ["the toy example", "玩具例子"],
  "W-logits.five": ["the same five words, this model, after “{story}”", "同样五个词，本页模型，接在“{story}”后面"],
  "W-logits.own": ["this model's own top {n} after “{story}”", "本页模型自己在“{story}”后面的前 {n} 名"],
  "W-logits.rank": ["{logit} (rank {rank})", "{logit}（第 {rank} 名）"],
  "W-logits.own-value": ["{logit} ({p})", "{logit}（{p}）"],
  "W-logits.readout": ["toy: {toy} leads at {tl}; this model: {lead} leads the five at {rl}, its own top token is {top} at {topl}",
    "玩具例子：{toy}以 {tl} 领先；本页模型：五个词里{lead}以 {rl} 领先，它自己的第一名是{top}，分数 {topl}"],
  "W-logits.told.toy": [
    "On the toy, {toy} leads at {logit} before anything has touched the scores, {gap} ahead of {second}.",
    "在玩具例子里，还没有任何东西动过这些分数，{toy}就以 {logit} 领先，比{second}高出 {gap}。",
  ],
  "W-logits.told.agree": [
    "The model on this page also puts {lead} first: of the five, {lead} scores highest, at {logit}, rank {rank} among its {vocab} tokens. Among the five alone it would get {share}, where the toy gives {toy} {toyShare}.",
    "本页的模型同样让{lead}领先：五个词里{lead}分数最高，是 {logit}，在它的 {vocab} 个词元里排第 {rank}。只在这五个词之间比，它能分到 {share}，而玩具例子给{toy}的是 {toyShare}。",
  ],
  "W-logits.told.disagree": [
    "The model on this page puts another word first: of the five it ranks {lead} highest, at {logit}, rank {rank} among its {vocab} tokens, not {toy}. Among the five alone {lead} would get {share}.",
    "本页的模型让另一个词领先：五个词里它把{lead}排在第一，分数 {logit}，在它的 {vocab} 个词元里排第 {rank}，而不是{toy}。只在这五个词之间比，{lead}能分到 {share}。",
  ],
  "W-logits.told.same-order": ["Its order of the five is the toy's own: {real}.", "它给这五个词排的次序和玩具例子完全一样：{real}。"],
  "W-logits.told.order": ["Its order of the five is {real}; the toy's is {toy}.",
    "它给这五个词排的次序是 {real}；玩具例子的是{toy}。"],
  "W-logits.told.top": [
    "But the five are not what this model expects most: together they get {mass} of its probability, and its own first choice, {top} at {p}, is a token the toy never listed.",
    "但这五个词并不是这个模型最期待的：它们加起来只分到 {mass} 的概率，而它自己的第一选择{top}（{p}）根本不在玩具例子的名单里。",
  ],
  "W-logits.told.top-is-one": [
    "Its own first choice over the whole vocabulary is one of the five, {top}, at {p}; the five together get {mass} of its probability.",
    "在整个词表里，它自己的第一选择正是这五个词之一：{top}（{p}）；这五个词加起来分到 {mass} 的概率。",
  ],
  "W-logits.told.piece": [
    "Its {rank} choice, {piece}, is not a word but the start of one: a word the vocabulary has no single token for is spelled in pieces, and a bar scores only the first piece. After {piece} the model itself goes on with {next} ({p}) or {next2} ({p2}).",
    "它的{rank}选择 {piece} 不是一个词，而是一个词的开头：词表里没有整词词元的词会被拆成几个片段来拼，柱子上的分数只是第一个片段的分数。在 {piece} 之后，模型自己最可能接 {next}（{p}）或 {next2}（{p2}）。",
  ],
  "W-logits.ordinal.1": ["first", "第一"],
  "W-logits.ordinal.2": ["second", "第二"],
  "W-logits.ordinal.3": ["third", "第三"],
  "W-logits.ordinal.4": ["fourth", "第四"],
  "W-logits.ordinal.5": ["fifth", "第五"],
  "W-logits.told.split": [
    "The word {word} is {n} tokens for this model ({pieces}): its bar shows the first piece's score, and its probability multiplies the pieces', each given the ones before it.",
    "对这个模型来说，{word}是{n}个词元（{pieces}）：它的柱子是第一个片段的分数，它的概率是各个片段的概率相乘，每个片段都以前面的片段为条件。",
  ],

  // W-logit-lens
  "title-W-logit-lens": ["Reading the answer off every block", "从每一个块读出答案"],
  "before-W-logit-lens": [
    "The final norm and the unembedding need not wait for the last block. Apply them to the stream after block 1, after block 2 and so on, at the last position of your prompt, and every block gets its own guess at the next token: a “logit lens”. The last row is no guess: it is the model's output itself, and the page checks that number by number. Move the slider to show more or fewer tokens per block, and watch where the model's final answer first reaches the top.",
    "最终归一化和反嵌入不必等到最后一个块。把它们用在第 1 个块之后、第 2 个块之后……的残差流上（取你的提示词的最后一个位置），每个块就都有了自己对下一个词元的猜测，这种读法叫 logit lens。最后一行不是猜测：它就是模型自己的输出，页面会逐个数字地核对。拖动滑块，调整每个块显示几个词元，看模型最后的答案从哪个块起升到第一。",
  ],
  "after-W-logit-lens": [
    "Early rows are shaky readings: the final norm and the unembedding were trained to read the last block's stream, not an earlier one. What they show is how the answer builds up as each block adds into the stream.",
    "前面几行只是粗略的读数：最终归一化和反嵌入是为读最后一个块的残差流而训练的，不是为更早的块。它们显示的是：随着每个块往残差流里加东西，答案是怎样一点点成形的。",
  ],
  "W-logit-lens.k": ["Tokens per block", "每个块显示的词元数"],
  "W-logit-lens.caption": ["The top {k} next tokens after “{tail}”, read after each block", "接在“{tail}”后面的前 {k} 个候选词元，在每个块之后读出"],
  "W-logit-lens.col.block": ["after block", "第几个块之后"],
  "W-logit-lens.col.rank": ["#{n}", "第 {n} 名"],
  "W-logit-lens.last": ["{n} (last)", "{n}（最后）"],
  "W-logit-lens.model": ["the model's output", "模型的输出"],
  "W-logit-lens.series": ["probability of {answer}, the model's final answer", "模型最终答案 {answer} 的概率"],
  "W-logit-lens.x": ["after block", "第几个块之后"],
  "W-logit-lens.y": ["probability", "概率"],
  "W-logit-lens.same": ["the same logits as the model's own output, bit for bit",
    "和模型自己输出的 logits 逐位相同"],
  "W-logit-lens.differs": ["NOT the model's own logits: a bug", "和模型自己的 logits 不同：这是个错误"],
  "W-logit-lens.readout": [({ k }) => `${plural(k, "{k} token", "{k} tokens")} per block; after block {n}, the last, the top token is {top} at {p}: {same}`,
    "每个块显示 {k} 个词元；第 {n} 个块（最后一个）之后，第一名是{top}（{p}）：{same}"],
  "W-logit-lens.told": [
    "After “{tail}”, the model's answer is {answer}. Read through the lens, it first tops a row after block {first} of {n}.",
    "接在“{tail}”后面，模型的答案是 {answer}。用 logit lens 读，它在第 {first} 个块（共 {n} 个）之后第一次排到第一。",
  ],
  "W-logit-lens.told.only-last": [
    "After “{tail}”, the model's answer is {answer}. Read through the lens, it tops a row only after the last block, block {n}: no earlier block puts it first.",
    "接在“{tail}”后面，模型的答案是 {answer}。用 logit lens 读，它只在最后一个块（第 {n} 个）之后才排到第一：之前没有一个块把它排在第一。",
  ],
  "W-logit-lens.told.settled": ["It stays on top from block {settled} on.", "从第 {settled} 个块起，它一直保持第一。"],
  "W-logit-lens.told.settled-last": ["It loses the top again, and holds it for good only at the last block.",
    "之后它又掉了下去，直到最后一个块才稳居第一。"],
  "W-logit-lens.told.same": [
    "The last row was compared with the model's own logits, number by number: they are identical, as they must be, since after the last block the lens is exactly the model's own final norm and unembedding.",
    "最后一行和模型自己的 logits 逐个数字比过：完全相同，也必须相同，因为在最后一个块之后，logit lens 做的正是模型自己的最终归一化和反嵌入。",
  ],
  "W-logit-lens.told.differs": [
    "The last row differs from the model's own logits. It should not: this is a bug in the lens.",
    "最后一行和模型自己的 logits 不一样。本不该如此：这是 logit lens 的一个错误。",
  ],

  // W-temperature
  "title-W-temperature": ["Temperature reshapes, never reorders", "温度改变形状，不改变次序"],
  "before-W-temperature": [
    "Softmax turns scores into probabilities that add up to 1, after dividing every score by the temperature T. Drag T, or use the presets: above 1 the toy's bars flatten, near 0 they pile onto the leader, and the order never changes. The second chart shows the same for the real model's top tokens on your prompt; “Draw a token” samples one from its whole vocabulary at this T.",
    "softmax 先把每个分数除以温度 T，再把它们变成加起来等于 1 的概率。拖动 T，或者点预设：T 大于 1 时玩具例子的柱子被拉平，T 接近 0 时概率全压到领先者身上，而次序从不改变。第二张图里，真实模型对你的提示词给出的前几名也是这样；“抽一个词元”会在当前的 T 下从它的整个词表里抽一个。",
  ],
  "after-W-temperature": [
    "Dividing by T scales every gap between scores by the same factor, so the order cannot change; only how decisively the first place wins. At T = 0 the sampler skips the draw and takes the top token: greedy decoding.",
    "除以 T 是把分数之间的每个差距按同一个比例缩放，所以次序不会变，变的只是第一名赢得有多彻底。T = 0 时采样器干脆不抽了，直接取第一名：这就是贪心解码。",
  ],
  "W-temperature.label": ["Temperature T", "温度 T"],
  "W-temperature.draw": ["Draw a token (full vocabulary)", "抽一个词元（整个词表）"],
  "W-temperature.readout": ["T = {t}: {toy} {p} (toy); real top {piece} {rp} of the full vocabulary",
    "T = {t}：{toy} {p}（玩具例子）；真实模型的第一名 {piece} 在整个词表中占 {rp}"],
  "W-temperature.drew": ["drew {piece} (id {id}) at T = {t} from all tokens", "在 T = {t} 下从全部词元中抽到 {piece}（编号 {id}）"],
  "W-temperature.told": [
    "At T = {t1}, {toy} holds {p1} of the toy's probability. At T = {t01} it holds {p01}: nearly everything. That is argmax seen as a limit: as T falls toward 0, sampling becomes taking the highest score, the same token every time.",
    "T = {t1} 时，{toy}占玩具例子 {p1} 的概率。T = {t01} 时它占 {p01}：几乎是全部。这就是作为极限的 argmax：T 往 0 降，采样就变成永远取最高分，每次都是同一个词元。",
  ],

  // W-top-k
  "title-W-top-k": ["Top-k: keep the k best", "Top-k：只留前 k 个"],
  "before-W-top-k": [
    "Argmax is one way to cut off the tail; keeping only the k highest-scoring tokens, then renormalizing, is another. Drag k down, or press k = 1, and watch the probability that is cut off grow. Each bar is a token's probability before the cut; after the arrow is what it becomes once the kept ones are renormalized to add up to 1.",
    "argmax 是切掉尾巴的一种办法；只留分数最高的 k 个词元、再重新归一化，是另一种。把 k 往下拖，或者点 k = 1，看被切掉的概率怎么变大。每根柱子是词元在切之前的概率；箭头后面是留下的词元重新归一化、加起来等于 1 之后的概率。",
  ],
  "after-W-top-k": [
    "On a flat distribution a fixed k cuts plausible tokens; on a peaked one it keeps unlikely ones. Top-p, next, lets the cut follow the shape.",
    "分布平坦时，固定的 k 会砍掉合理的词元；分布尖锐时，它又会留下不太可能的词元。下一个组件里的 top-p 让切口跟着形状走。",
  ],
  "W-top-k.readout": ["k = {k}: keeps {kept}; cuts {toy} of the toy's mass, {real} of the real model's",
    "k = {k}：保留{kept}；砍掉玩具例子 {toy} 的概率，真实模型 {real} 的概率"],
  "W-top-k.told": [
    "At k = {k}, {n} candidate is left, {top}, and no alternative: renormalized, its {p} becomes {q}. That is argmax again. And k never adapts to the shape: it cuts {cut} of the toy's probability and {real} of the real model's for your prompt, and keeps exactly k whatever the distribution looks like.",
    "k = {k} 时只剩{n}个候选：{top}，没有任何备选：重新归一化后，它的 {p} 变成 {q}。这又是 argmax。而且 k 从不随分布的形状调整：它切掉玩具例子 {cut} 的概率、真实模型在你的提示词上 {real} 的概率，不管分布长什么样，都正好留 k 个。",
  ],

  // W-top-p
  "title-W-top-p": ["Top-p: the smallest set that reaches p", "Top-p：累计达到 p 的最小集合"],
  "before-W-top-p": [
    "Top-p adapts: it keeps the smallest set of tokens whose probabilities add up to at least p, so a confident distribution keeps few and a flat one keeps many; the kept ones are then renormalized. Drag p, or press p = 0.9. As for top-k, each bar is the probability before the cut, and after the arrow, after renormalizing.",
    "top-p 是自适应的：只留累计概率至少达到 p 的最小集合，所以分布越尖锐留得越少，越平坦留得越多；留下的再重新归一化。拖动 p，或者点 p = 0.9。和 top-k 一样，每根柱子是切之前的概率，箭头后面是重新归一化之后的。",
  ],
  "after-W-top-p": [
    "Push p down and the set shrinks to one token; push it to 1 and every token with any probability stays.",
    "把 p 往下推，集合能缩到只剩一个词元；推到 1，只要有一点概率的词元就全都留着。",
  ],
  "s03.renormalized": ["{p} → {q}", "{p} → {q}"],
  "W-top-p.readout": ["p = {p}: {n} of 5 toy candidates survive ({kept}); the real model keeps {rk} of {vocab} tokens",
    "p = {p}：5 个玩具候选中留下 {n} 个（{kept}）；真实模型在 {vocab} 个词元中保留 {rk} 个"],
  "W-top-p.told": [
    "At p = {p} exactly {n} survive, {kept}: together {mass}, just over {pp}, and the rest never get in. Renormalized, they become {renorm}. On the real model the same p keeps {rk} of its {vocab} tokens for your prompt.",
    "p = {p} 时恰好留下{n}个：{kept}，加起来 {mass}，刚过 {pp}，其余的都没进来。重新归一化后，它们变成 {renorm}。在真实模型上，同样的 p 为你的提示词保留了 {vocab} 个词元中的 {rk} 个。",
  ],

  // W-greedy-loop
  "title-W-greedy-loop": ["Greedy decoding loops; can one sample break it?", "贪心解码会绕圈：一次采样能打破它吗？"],
  "before-W-greedy-loop": [
    "Greedy decoding takes the top token at every step. Run it on the prompt below: once its own output circles back on itself, nothing in the loop notices, and the same few tokens come back until the window ends. Then one token is drawn at T = 1 at a step of your choice, and greedy decoding takes over again. The page tries that at every step of the window's first half, so you see how often a single sample gets out, not only whether it did once. “Draw again” picks a new seed: every step draws afresh.",
    "贪心解码每一步都取第一名。在下面的提示词上运行它：一旦它自己的输出绕回原处，循环里没有任何东西会察觉，同样几个词元会一直重复到窗口结束。然后在你选的那一步按 T = 1 抽一个词元，之后再交回给贪心解码。页面会在窗口前一半的每一步都这样试一遍，所以你看到的是一次采样有多常能跳出来，而不只是某一次跳没跳出来。“重新抽”会换一个随机种子，每一步都重新抽。",
  ],
  "after-W-greedy-loop": [
    "The window is fixed: a loop that would only come back after it is not counted. The sample goes only in the first half, so at least half the window follows it, room for a loop to come back and be seen.",
    "窗口是定死的：要到窗口之后才会回来的循环不算。采样只放在前一半，所以它后面至少还有半个窗口，足够让循环回来并被看到。",
  ],
  "W-greedy-loop.prompt": ["Prompt", "提示词"],
  "W-greedy-loop.at": ["Sample once at step", "在第几步采样一次"],
  "W-greedy-loop.run": ["Run: greedy, then one sample at every step", "运行：先贪心，再在每一步各试一次采样"],
  "W-greedy-loop.redraw": ["Draw again (new seed)", "重新抽（换随机种子）"],
  "W-greedy-loop.seed": ["seed {seed}", "随机种子 {seed}"],
  "W-greedy-loop.aria.greedy": ["greedy output", "贪心解码的输出"],
  "W-greedy-loop.aria.forced": ["output with one sample", "采样一次后的输出"],
  "W-greedy-loop.greedy": ["greedy:", "贪心解码："],
  "W-greedy-loop.forced": ["one sample at step {at} (marked), then greedy:", "在第 {at} 步采样一次（已标出），之后贪心："],
  "W-greedy-loop.kind.same": ["same token as greedy", "抽到的就是贪心的词元"],
  "W-greedy-loop.kind.again": ["another token, loop again", "换了词元，又绕回循环"],
  "W-greedy-loop.kind.broke": ["another token, loop broken", "换了词元，循环被打破"],
  "W-greedy-loop.kind.changed": ["another token, still no loop", "换了词元，仍然没有循环"],
  "W-greedy-loop.kind.appeared": ["another token, and a loop appears", "换了词元，反而出现了循环"],
  "W-greedy-loop.strip-axis": ["the step of the one sample (first {n} steps; click one)", "唯一一次采样放在第几步（前 {n} 步；可点选）"],
  "W-greedy-loop.strip-summary": ["{n} steps tried with seed {seed}: the draw differs from greedy's token at {differ}, the loop is broken at {k}",
    "用随机种子 {seed} 试了 {n} 步：抽到的词元和贪心不同的有 {differ} 步，循环被打破的有 {k} 步"],
  "W-greedy-loop.loop": ["loops with period {period} from token {start}", "从第 {start} 个词元起以周期 {period} 循环"],
  "W-greedy-loop.no-loop": ["no loop", "没有循环"],
  "W-greedy-loop.readout": [
    "over {steps} generated tokens: greedy {greedy}; with one sample at step {at} (seed {seed}): {forced} — {verdict}.",
    "在生成的 {steps} 个词元内：贪心解码{greedy}；在第 {at} 步采样一次（随机种子 {seed}）后：{forced}——{verdict}。",
  ],
  "W-greedy-loop.verdict.no-greedy-loop": ["greedy decoding did not loop in this window, so there is no loop to break",
    "贪心解码在这个窗口内没有绕圈，所以没有循环可打破"],
  "W-greedy-loop.verdict.same-token": [
    "the draw was {piece}, greedy's own token (it had {gp}), so the text is identical and the loop untouched",
    "抽到的是 {piece}，正是贪心会取的词元（它的概率是 {gp}），所以文字完全相同，循环原封不动"],
  "W-greedy-loop.verdict.same-text": [
    "the draw {piece} is another token than greedy's {greedyPiece} but spells the same text, so nothing changed",
    "抽到的 {piece} 和贪心的 {greedyPiece} 不是同一个词元，但拼出的文字一样，所以什么都没变"],
  "W-greedy-loop.verdict.broke": [
    "the draw {piece} (probability {p}) replaced greedy's {greedyPiece}, and no loop is left at the window's end: this sample broke it",
    "抽到的 {piece}（概率 {p}）换掉了贪心的 {greedyPiece}，到窗口结束时已经没有循环：这次采样打破了它"],
  "W-greedy-loop.verdict.same-loop": [
    "the draw {piece} (probability {p}) replaced greedy's {greedyPiece}, but greedy decoding after it fell back into the same loop",
    "抽到的 {piece}（概率 {p}）换掉了贪心的 {greedyPiece}，但之后的贪心解码又落回了同一个循环"],
  "W-greedy-loop.verdict.other-loop": [
    "the draw {piece} (probability {p}) replaced greedy's {greedyPiece}, but greedy decoding after it fell into another loop",
    "抽到的 {piece}（概率 {p}）换掉了贪心的 {greedyPiece}，但之后的贪心解码又落进了另一个循环"],
  "W-greedy-loop.search": [
    ({ k }) => (k === 0
      ? "Tried at each of the first {n} steps with this seed, the draw differs from greedy's token at {differ} and breaks the loop at none of them."
      : "Tried at each of the first {n} steps with this seed, the draw differs from greedy's token at {differ} and breaks the loop at {k} of the {n} (steps {steps}); {here}."),
    ({ k }) => (k === 0
      ? "用这个随机种子在前 {n} 步各试一次：抽到的词元和贪心不同的有 {differ} 步，但没有一步打破了循环。"
      : "用这个随机种子在前 {n} 步各试一次：抽到的词元和贪心不同的有 {differ} 步，{n} 步里有 {k} 步打破了循环（第 {steps} 步）；{here}。"),
  ],
  "W-greedy-loop.search-no-loop": [
    "Tried at each of the first {n} steps with this seed, the draw differs from greedy's token at {differ}.",
    "用这个随机种子在前 {n} 步各试一次：抽到的词元和贪心不同的有 {differ} 步。"],
  "W-greedy-loop.here-yes": ["step {at}, the one shown, is one of them", "当前显示的第 {at} 步正是其中之一"],
  "W-greedy-loop.here-no": ["step {at}, the one shown, is not", "当前显示的第 {at} 步不在其中"],
  "W-greedy-loop.told": [
    "Here greedy decoding falls into a loop of {period} tokens from token {start} and repeats it to the end of the {steps}-token window (the engine's own test: the last tokens repeat one block at least three times).",
    "这里贪心解码从第 {start} 个词元起落进一个 {period} 个词元长的循环，一直重复到 {steps} 个词元的窗口结束（用的是引擎自己的检测：最后的词元把同一段至少重复三次）。",
  ],
  "W-greedy-loop.told.no-loop": [
    "On this prompt greedy decoding did not loop within {steps} tokens; try the default prompt, or one that invites a list.",
    "在这个提示词上，贪心解码在 {steps} 个词元内没有绕圈；试试默认的提示词，或者一个引人列清单的提示词。",
  ],
  "W-greedy-loop.told.name": [
    "Greedy decoding has no way to notice such a loop, and no way out of it. In production the failure has a name: repetition collapse.",
    "贪心解码没有任何机制能察觉这种循环，也没有出路。生产系统里这个失效有个名字，叫重复坍缩（<cite>repetition collapse</cite>）。",
  ],
  "W-greedy-loop.told.search": [
    ({ count }) => (count === 0
      ? "A single sample is a weak cure: with seed {seed} it breaks the loop at none of the {n} steps it can go at. Samplers in production draw at every step instead, often with a penalty on repeated tokens as well."
      : "A single sample is a weak cure: with seed {seed} it breaks the loop at {k} of the {n} steps it can go at. Samplers in production draw at every step instead, often with a penalty on repeated tokens as well."),
    ({ count }) => (count === 0
      ? "一次采样是很弱的解药：用随机种子 {seed}，它能放的 {n} 步里没有一步打破了循环。生产中的采样器是每一步都抽，常常还对重复的词元加惩罚。"
      : "一次采样是很弱的解药：用随机种子 {seed}，它能放的 {n} 步里只有 {count} 步打破了循环。生产中的采样器是每一步都抽，常常还对重复的词元加惩罚。"),
  ],
};
