// §04 The loop. Every word of the section, [English, Chinese].

import { plural } from "../lib/i18n.js";

export default {
  "title-s04": ["4. The loop", "4. 循环"],
  "intro-s04": [
    "So far the model has run once: a prompt went in, one distribution over the next token came out, and section 3 chose a token from it. Generation is that same forward pass, called again and again: run the stack, choose a token, append it to the text, run again on the longer text. There is no separate generation mode, only a loop around what the first three sections built. This section follows the loop for a few steps, then counts what it costs when every step starts from scratch.",
    "到这里，模型只完整地跑过一次：提示词进去，出来一个关于下一个词元的概率分布，第 3 节再从中选出一个词元。生成并不需要另一套机制，就是把同一次前向传播一遍又一遍地调用：跑一遍整个模型，选出一个词元，把它接到文字末尾，再拿变长了的文字跑一遍。没有什么单独的“生成模式”，只是在前三节搭好的东西外面套了一个循环。这一节先跟着这个循环走几步，再算一算：如果每一步都从头算起，要付出多少代价。",
  ],
  "bridge-s04": [
    "So the cached loop wins, and by a margin that grows with every token. But it only works because something keeps the earlier tokens' keys and values between steps. What exactly is kept, and how much room it takes, is section 5.",
    "所以缓存循环赢了，而且每多生成一个词元，赢得就更多。但它之所以成立，是因为有东西在步与步之间保存着先前词元的键和值。到底存了什么、要占多少地方，就是第 5 节的内容。",
  ],
  "loop.step": ["Step", "步数"],
  "loop.step-axis": ["step", "步"],
  "loop.generated": ["Generated tokens", "生成的词元数"],
  "loop.naive-total": ["naive (running total)", "朴素（累计）"],
  "loop.cached-total": ["cached, prefill counted (running total)", "缓存，计入预填充（累计）"],
  "loop.x": ["generated tokens", "已生成的词元数"],
  "loop.y": ["token-work so far (tokens through the model)", "累计工作量（送进模型的词元数）"],
  // the page's one convention for naive ÷ cached: the prefill counted in both loops, and beside it the count after the
  // prompt (the cached loop at 1 a step), named the same way wherever a ratio is shown (§04, §07, the recap)
  "ratio.both": [
    "{w}× with the prefill counted in both loops, {a}× counting only the steps after the prompt",
    "两边都计入预填充是 {w} 倍，只算提示词之后的各步是 {a} 倍",
  ],
  "loop.cost-readout": [
    ({ n }) => `${plural(n, "{n} token", "{n} tokens")} generated: naive {naive} tokens of work, cached {cached} (prefill counted) — {ratio}`,
    "已生成 {n} 个词元：朴素循环的工作量是 {naive} 个词元，缓存循环是 {cached} 个（计入预填充）——{ratio}",
  ],

  // W-autoregress
  "title-W-autoregress": ["Each output becomes the next input", "每一步的输出，都是下一步的输入"],
  "before-W-autoregress": [
    "Drag the step slider through twelve greedy steps on your prompt. The grey tokens are the prompt, there from the start; the blue ones were chosen at earlier steps; the yellow one is being chosen at this step. Move one step on and watch the yellow token turn blue: it is now part of what the model reads.",
    "拖动步数滑块，在你的提示词上走十二步贪心生成。灰色的是提示词，一开始就在；蓝色的是前面几步选出的；黄色的是这一步正在选出的词元。往前走一步，看黄色的词元变成蓝色：它已经成了模型要读的输入的一部分。",
  ],
  "after-W-autoregress": [
    "That is all “autoregressive” means: what step t outputs is part of what step t + 1 reads. The model keeps no other memory of its earlier choices than the text itself.",
    "“自回归”的全部意思就在这里：第 t 步的输出，是第 t + 1 步输入的一部分。除了这段文字本身，模型对自己先前的选择没有任何别的记忆。",
  ],
  "W-autoregress.first": [
    ({ n }) => `Step 1: the input is the prompt alone (${plural(n, "{n} token", "{n} tokens")}); the model chose {piece} for position {position}.`,
    "第 1 步：输入只有提示词（{n} 个词元）；模型为位置 {position} 选出了 {piece}。",
  ],
  "W-autoregress.later": [
    ({ k }) => `Step {at}: the input is the prompt and ${plural(k, "the token chosen at step 1", "the {k} tokens chosen before")} ({n} tokens in all); the model chose {piece} for position {position}.`,
    "第 {at} 步：输入是提示词加上之前选出的 {k} 个词元（共 {n} 个）；模型为位置 {position} 选出了 {piece}。",
  ],
  "W-autoregress.next": [" It is part of the input of step {next}.", "它会成为第 {next} 步输入的一部分。"],
  "W-autoregress.last": [" This is the last of the {steps} steps shown, so no step here reads it.",
    "这是这里展示的 {steps} 步中的最后一步，后面没有哪一步再读它。"],
  "W-autoregress.section-3": ["section 3", "第 3 节"],
  "W-autoregress.repeat": [
    ({ start, period }) => `Greedy choice is already going round in circles here: ${start === 0 ? "from the first generated token" : "from generated token {from}"} the text comes back ${plural(period, "every token", "every {period} tokens")}, {text} again and again. That is the greedy loop of section 3 ({link}), live on your prompt; the loops below generate exactly these tokens.`,
    ({ start }) => `贪心选择在这里已经开始绕圈：${start === 0 ? "从第一个生成的词元起" : "从第 {from} 个生成的词元起"}，文字每 {period} 个词元重复一次，{text}一遍又一遍。这就是第 3 节的贪心循环（{link}），在你的提示词上现场发生；下面两种循环生成的也正是这些词元。`,
  ],

  // W-naive-vs-cached
  "title-W-naive-vs-cached": ["Naive or cached: the same tokens, different work", "朴素还是缓存：同样的词元，不同的工作量"],
  "W-naive-vs-cached.runs-on": [
    "Computed on {model} from the prompt at the top: both loops run, twelve greedy steps each, every step timed.",
    "用页面顶部的提示词，在 {model} 上计算：两种循环都实际运行，各走十二步贪心生成，每一步都计时。",
  ],
  "before-W-naive-vs-cached": [
    "The naive loop keeps nothing between steps: to choose token n + 1 it sends all n tokens so far through every block again. The cached loop keeps each token's keys and values, so once the prompt is in it sends only the newest token. Both run on your prompt, side by side. Drag the step slider: the tokens each loop sends through the model at that step are lit, and the charts show every step's work and time, the two loops on one scale.",
    "朴素循环在步与步之间什么都不保留：要选出第 n + 1 个词元，就得把已有的 n 个词元重新送过每一个块。缓存循环保存每个词元的键和值，所以提示词处理完之后，每步只需送入最新的那个词元。两种循环都在你的提示词上运行，并排放在这里。拖动步数滑块：亮起的是这一步各自送进模型的词元；下面的图把每一步的工作量和耗时画出来，两种循环用同一把尺子。",
  ],
  "after-W-naive-vs-cached": [
    "Under the naive loop every step lights the whole prefix again: n tokens of work to gain token n + 1. Under the cached loop only the newest square lights.",
    "在朴素循环里，每往前一步，整个前缀都要重新亮一遍：用 n 个词元的工作量，换来第 n + 1 个词元。在缓存循环里，只有最新的那一格会亮。",
  ],
  "W-naive-vs-cached.again": ["Time both again", "重新计时"],
  "W-naive-vs-cached.naive-runs": ["naive sends:", "朴素循环送入："],
  "W-naive-vs-cached.cached-runs": ["cached sends:", "缓存循环送入："],
  "W-naive-vs-cached.naive": ["naive", "朴素"],
  "W-naive-vs-cached.cached": ["cached", "缓存"],
  "W-naive-vs-cached.work-axis": ["tokens sent through all {layers} blocks", "送过全部 {layers} 个块的词元数"],
  "W-naive-vs-cached.work-aria": [
    "columns per step, naive beside cached on one axis: over {steps} steps naive grows from {a} to {b} tokens, cached falls to {c} after the prompt",
    "每一步两根柱子，朴素和缓存并排、共用一个坐标轴：{steps} 步里朴素从 {a} 个词元涨到 {b} 个，缓存在提示词之后降到 {c} 个",
  ],
  "W-naive-vs-cached.time-axis": [({ runs }) => (runs > 1 ? "time per step (ms, median of {runs} runs; band: their range)" : "time per step (ms)"),
    ({ runs }) => (runs > 1 ? "每步耗时（ms，{runs} 次运行的中位数；色带：其范围）" : "每步耗时（ms）")],
  "W-naive-vs-cached.readout": [
    ({ n, c }) => `Step {at}: naive sent ${plural(n, "{n} token", "{n} tokens")} through the model in {nt} ms ({nlo}–{nhi}), cached ${plural(c, "{c} token", "{c} tokens")} in {ct} ms ({clo}–{chi}). All {steps} steps: naive {nw} tokens in {NT} ms, cached {cw} tokens in {CT} ms (medians of {runs} runs, each step's range in brackets).`,
    "第 {at} 步：朴素循环送入 {n} 个词元，用了 {nt} ms（{nlo}–{nhi}）；缓存循环送入 {c} 个，用了 {ct} ms（{clo}–{chi}）。全部 {steps} 步：朴素 {nw} 个词元、{NT} ms，缓存 {cw} 个词元、{CT} ms（{runs} 次运行的中位数，括号里是每步的范围）。",
  ],
  "W-naive-vs-cached.readout-one": [
    ({ n, c }) => `Step {at}: naive sent ${plural(n, "{n} token", "{n} tokens")} through the model in {nt} ms, cached ${plural(c, "{c} token", "{c} tokens")} in {ct} ms. All {steps} steps: naive {nw} tokens in {NT} ms, cached {cw} tokens in {CT} ms (one run).`,
    "第 {at} 步：朴素循环送入 {n} 个词元，用了 {nt} ms；缓存循环送入 {c} 个，用了 {ct} ms。全部 {steps} 步：朴素 {nw} 个词元、{NT} ms，缓存 {cw} 个词元、{CT} ms（只运行了一次）。",
  ],
  "W-naive-vs-cached.differ": ["The two loops chose different tokens at some step, which they should not.",
    "两种循环在某一步选出了不同的词元——这本不该发生。"],
  "W-naive-vs-cached.work": [
    ({ p }) => `Both loops chose the same {n} tokens, so the work is all that differs, and there are two honest ways to count it. As the loops ran, the prompt's prefill counted in both: naive step i (from 1) sends (P + i − 1) tokens, Σ (P + i − 1) = {nw}; cached sends ${plural(p, "the {p} prompt token", "the {p} prompt tokens")} at step 1 and one token after, P + n − 1 = {cw}; {w}×. Counting only the steps after the prompt is read, the cached loop at one token a step: {nw} ÷ {n} = {a}×. That second count is the usual way to quote the saving, and the presets below use it ({r0}× at the first token, {r1}× at 12, {r2}× at GPT-2 small's 100); this page gives both counts wherever it shows the ratio.`,
    "两种循环选出的 {n} 个词元完全相同，差别只在工作量，而工作量有两种都说得通的算法。按实际运行来算，两边都计入预填充：朴素循环第 i 步（i 从 1 数起）送入 P + i − 1 个词元，Σ (P + i − 1) = {nw}；缓存循环第 1 步送入提示词的 {p} 个词元，之后每步一个，P + n − 1 = {cw}；是 {w} 倍。如果只算读完提示词之后的各步，缓存循环每步按一个词元计：{nw} ÷ {n} = {a} 倍。后一种是引用这个节省时的通常算法，下面的预设用的也是它（第一个词元 {r0} 倍，第 12 个 {r1} 倍，GPT-2 small 生成 100 个时 {r2} 倍）；本页凡是给出这个比值的地方，两种算法都写出来。",
  ],
  "W-naive-vs-cached.miscounted": [
    "Yet the tokens the loops sent, {nw} and {cw}, are not what the formulas give for a {p}-token prompt and {n} steps: Σ (P + i − 1) = {cnw} and P + n − 1 = {ccw}.",
    "可是两种循环实际送入的 {nw} 和 {cw} 个词元，与公式对 {p} 个词元的提示词、{n} 步给出的不一致：Σ (P + i − 1) = {cnw}，P + n − 1 = {ccw}。",
  ],
  "W-naive-vs-cached.few": [
    ({ runs }) => `Timing too noisy to conclude: in the time this widget allows, the server could run each loop only ${plural(runs, "once", "{runs} times")}, too few to say anything about their times. The work above is exact; time both again when the server is quieter.`,
    ({ runs }) => `计时噪声太大，下不了结论：在本组件允许的时间里，服务器只来得及把两种循环各跑 ${runs === 1 ? "一" : "{runs} "}次，不足以说明它们的耗时。上面的工作量是精确的；等服务器空闲些再重新计时。`,
  ],
  "W-naive-vs-cached.noisy": [
    "Timing too noisy to conclude: over {runs} runs naive ÷ cached time ranged from {lo}× to {hi}×, on both sides of 1, so these runs cannot say which loop is faster on this server now. The work above is exact; time both again when the server is quieter.",
    "计时噪声太大，下不了结论：{runs} 次运行里，朴素 ÷ 缓存的耗时从 {lo} 倍到 {hi} 倍，跨过了 1，所以这几次运行说不出眼下在这台服务器上哪种循环更快。上面的工作量是精确的；等服务器空闲些再重新计时。",
  ],
  "W-naive-vs-cached.naive-faster": [
    "In every one of {runs} runs the naive loop took less time than the cached one (naive ÷ cached {lo}× to {hi}×), though it did {w}× the work: on this server now, something other than the work sets these times.",
    "{runs} 次运行里，每一次朴素循环都比缓存循环用时少（朴素 ÷ 缓存为 {lo} 倍到 {hi} 倍），尽管它的工作量是 {w} 倍：眼下在这台服务器上，决定这些耗时的不是工作量。",
  ],
  "W-naive-vs-cached.cached-faster": [
    "The cached loop was faster in every one of {runs} runs (naive took {lo}× to {hi}× its time), but the runs spread too widely to say how that gap stands against the work gap of {w}×.",
    "{runs} 次运行里，每一次都是缓存循环更快（朴素用时是它的 {lo} 倍到 {hi} 倍），但各次结果分散得太开，说不出这个差距和 {w} 倍的工作量差距相比如何。",
  ],
  "W-naive-vs-cached.narrower": [
    "The time gap, {tr}× ({span}), is narrower than the work gap of {w}× in every run: a step that sends one token is not that much cheaper than a step that sends many.",
    "时间差距是 {tr} 倍（{span}），每一次都比 {w} 倍的工作量差距小：只送一个词元的一步，并不比送很多个词元的一步便宜多少。",
  ],
  "W-naive-vs-cached.fit": [
    "A straight line through the {points} median step times says why (it fits them with r² = {r2}): a step costs about {a} ms whatever it holds, plus {b} ms for each token in it. Over all {n} steps of the cached loop, whose steps after the first hold one token, that fixed part is about {share} of the time ({one} of each one-token step after the first): every weight read once and every block called once, whatever the step holds; {link} is about exactly that.",
    "把这 {points} 个中位数步时拟合成一条直线，就能看出原因（拟合度 r² = {r2}）：不管一步里有多少词元，它都要花大约 {a} ms，每多一个词元再加 {b} ms。缓存循环在第一步之后每步只有一个词元；在它全部 {n} 步的耗时里，固定的那部分约占 {share}（第一步之后的单词元步里约占 {one}）：所有权重读一遍、每个块调用一次，不管这一步装了什么；{link} 讲的正是这件事。",
  ],
  "W-naive-vs-cached.intensity": ["the widget on work per byte", "“每字节权重换来的运算”那个组件"],
  // naive ÷ cached time over the runs: a range, or one value where every run gave the same
  "W-naive-vs-cached.span": ["from {lo}× to {hi}× over {runs} runs", "{runs} 次运行里从 {lo} 倍到 {hi} 倍"],
  "W-naive-vs-cached.span-same": ["all {runs} runs agree: {lo}×", "{runs} 次运行结果一致：{lo} 倍"],
  "W-naive-vs-cached.follows": ["The time follows the work in every one of {runs} runs: {tr}× the time ({span}) for {w}× the work.",
    "{runs} 次运行里，每一次时间都跟着工作量走：{w} 倍的工作量，花了 {tr} 倍的时间（{span}）。"],
  "W-naive-vs-cached.wider": [
    "The time gap, {tr}× ({span}), is wider than the work gap of {w}× in every run: here the longer steps cost more per token than the short ones.",
    "时间差距是 {tr} 倍（{span}），每一次都比 {w} 倍的工作量差距还大：在这里，长的步骤每个词元比短的步骤更贵。",
  ],
  "W-naive-vs-cached.measured": [
    "The times are medians of {runs} runs of both loops, their steps taken in turn, measured at {time} by the server running this page; naive ÷ cached time: {span}. “Time both again” measures them anew.",
    "这些时间是两种循环交替逐步运行 {runs} 次的中位数，由运行本页的服务器在 {time} 测得；朴素 ÷ 缓存的耗时：{span}。按“重新计时”会再测一次。",
  ],
  "W-naive-vs-cached.measured-one": [
    "The times are one run of both loops, their steps taken in turn, measured at {time} by the server running this page: one run, so how noisy it was is unknown. “Time both again” measures them anew.",
    "这些时间是两种循环交替逐步运行一次的结果，由运行本页的服务器在 {time} 测得：只有一次，所以不知道它有多嘈杂。按“重新计时”会再测一次。",
  ],

  // W-cost-toy
  "title-W-cost-toy": ["What the loop costs: a toy", "循环的代价：玩具例子"],
  "W-cost-toy.runs-on": [
    "A formula, on a toy's shape: 4 blocks, d = 64, the 5-token prompt <tok>\"the cat sat on the\"</tok>.",
    "公式，按玩具例子的配置计算：4 块，d = 64，提示词 <tok>\"the cat sat on the\"</tok> 共 5 个词元。",
  ],
  "before-W-cost-toy": [
    "Now spread the gap over a whole generation. Drag the number of generated tokens, or press a preset, and watch the two running totals pull apart.",
    "现在把这个差距摊到一整次生成上。拖动生成的词元数，或者按一个预设，看两条累计曲线怎么越拉越开。",
  ],
  "W-cost-toy.preset-1": ["first token", "第 1 个词元"],
  "W-cost-toy.preset-12": ["12 tokens", "12 个词元"],
  "W-cost-toy.told": [
    "At the first generated token both loops send the same {p} prompt tokens: {w0}× with the prefill counted. “The first token costs {r0}×” is true only with the cached loop's prefill left out, the naive loop's {p} tokens against one. By token {n1} it is {w1}× with the prefill and {r1}× without, and the gap keeps opening: the naive total grows with the square of the generated length, the cached one along a straight line. The blocks and the width multiply both loops alike, so only two things set the ratio: how long the prompt is and how many tokens are generated.",
    "生成第一个词元时，两种循环送入的都是提示词的 {p} 个词元：计入预填充是 {w0} 倍。“第一个词元就要付 {r0} 倍”只有在不算缓存循环的预填充时才成立，也就是朴素循环的 {p} 个词元对一个。到第 {n1} 个词元，计入预填充是 {w1} 倍，不计是 {r1} 倍，而且差距还在拉大：朴素循环的累计量随生成长度的平方增长，缓存循环的只沿一条直线增长。块数和宽度对两种循环一视同仁地放大，所以决定这个比值的只有两样：提示词多长，生成多少个词元。",
  ],
  "after-W-cost-toy": [
    "These ratios are pure counting; the widget above showed what they turn into, in milliseconds, on a real model.",
    "这些比值纯粹是数出来的；上面那个组件已经展示了它们在真实模型上变成多少毫秒。",
  ],

  // W-cost-gpt2
  "title-W-cost-gpt2": ["A longer prompt, a longer answer", "更长的提示词，更长的回答"],
  "W-cost-gpt2.runs-on": [
    "A formula, on GPT-2 small's shape: 12 blocks, d_model 768, a 20-token prompt.",
    "公式，按 GPT-2 small 的配置计算：12 块，d_model 768，提示词 20 个词元。",
  ],
  "before-W-cost-gpt2": [
    "Since blocks and width cancel out, moving to GPT-2 small (12 blocks, d_model 768) changes the ratio only through the setting that comes with it here: a 20-token prompt and up to 200 generated tokens. This chart draws the ratio itself, counted both ways, as the generation grows. Drag out to 100 generated tokens, or press the preset.",
    "既然块数和宽度在比值里会约掉，换成 GPT-2 small（12 块，d_model 768）之后，比值的变化只来自这里另设的两个数：提示词 20 个词元，最多生成 200 个。这张图直接画出比值本身，两种算法各一条线，随生成长度增长。把生成数拖到 100，或者按预设按钮。",
  ],
  "W-cost-gpt2.preset-100": ["100 tokens", "100 个词元"],
  "W-cost-gpt2.with": ["prefill counted in both loops", "两边都计入预填充"],
  "W-cost-gpt2.after": ["steps after the prompt only", "只算提示词之后的各步"],
  "W-cost-gpt2.y": ["naive ÷ cached work", "朴素 ÷ 缓存的工作量"],
  "W-cost-gpt2.told": [
    "At {n0} generated tokens the naive loop has done {a0}× the cached loop's work counting only the steps after the prompt, {w0}× with the prefill counted. No rounding error either way: it is why production systems never re-run the prefix.",
    "生成到 {n0} 个词元时，只算提示词之后的各步，朴素循环的工作量是缓存循环的 {a0} 倍；计入预填充是 {w0} 倍。不管按哪种算法，这都不是可以忽略的小差距——生产系统从不重跑前缀，原因就在这里。",
  ],
  "after-W-cost-gpt2": [
    "Each step of the cached loop still reads the whole cache, though: the price moves from recomputing to remembering.",
    "不过，缓存循环的每一步仍要把整个缓存读一遍：代价从“重新计算”挪到了“记住”上。",
  ],
};
