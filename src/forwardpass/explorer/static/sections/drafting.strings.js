// §07 Beyond the loop: one read of the weights, several tokens. Every word of the section, [English, Chinese].

const plural = (n, one, many) => (n === 1 ? one : many);

export default {
  "title-drafting": ["7. Beyond the loop: one read of the weights, several tokens", "7. 循环之外：读一遍权重，得到好几个词元"],
  "intro-drafting": [
    "Each step of the loop reads every weight of the model once and gets one token for it. Yet one read can serve many rows, as the prompt's prefill does. Speculative decoding spends that: guess the next few tokens, run the last token and the guesses through the model as the rows of one pass, and keep the guesses for as long as the model, row by row, chooses the same tokens itself. At the first guess it would not have chosen, its own choice takes that place and the rest are dropped, so the text is exactly the plain loop's; only the number of passes changes. forwardpass's engine needs no second model for the guesses: it copies them from the text itself. If the last few tokens stood somewhere earlier, in the prompt or in what the model has written, it guesses that what followed them then follows them now.",
    "循环的每一步都把模型的全部权重读一遍，换来一个词元。可是一遍读取能同时服务很多行，预填充提示词时就是这样。推测解码正是利用这一点：先猜接下来的几个词元，把最后一个词元和这些猜测作为同一遍计算的几行送进模型；只要模型逐行来看自己也会选出同样的词元，这些猜测就保留下来。遇到第一个模型自己不会选的猜测，就换成模型自己的选择，其后的猜测全部丢掉，所以写出的文字和普通循环一字不差，变的只是计算的遍数。forwardpass 的引擎不需要第二个模型来猜：它直接从文本本身抄。如果最后几个词元在前面出现过（在提示词里，或在模型已经写出的内容里），就猜上次跟在它们后面的内容这次也会跟上。",
  ],
  "bridge-drafting": [
    "Drafting changes how many passes a text takes, never the loop that writes it. The next section folds that loop into a few lines of code that run, with the price of each line beside it.",
    "草稿改变的是一段文字要算多少遍，而不是写出它的那个循环。下一节把这个循环收进几行能运行的代码，每一行旁边标上它的价钱。",
  ],

  // W-drafting
  "title-W-drafting": ["Drafts copied from the text, checked in one pass", "从文本里抄来的草稿，一遍验完"],
  "W-drafting.runs-on.prompt": [
    "Computed on {model} from the prompt at the top, through the engine twice: with drafting, as it serves every request, and without.",
    "用页面顶部的提示词，在 {model} 上经由引擎计算两次：一次带草稿（引擎服务每个请求时都这样做），一次不带。",
  ],
  "W-drafting.runs-on.list": [
    "Computed on {model} from the list below, through the engine twice: with drafting, as it serves every request, and without.",
    "用下面这份清单，在 {model} 上经由引擎计算两次：一次带草稿（引擎服务每个请求时都这样做），一次不带。",
  ],
  "before-W-drafting": [
    "Each box below is one pass of the model and the tokens it added to the text: a green token was drafted and kept, a blue one the model chose itself, one in every pass. Choose a pass (its box, or the slider) to see its draft: where in the text it was copied from, which tokens the model kept, and the first it refused. The text to continue is your prompt or, with the switch, a list to copy: a text that repeats itself.",
    "下面每个方框是模型的一遍计算，以及这一遍给文本添上的词元：绿色的是草稿里被保留下来的，蓝色的是模型自己选的，每一遍都有一个。选一遍（点它的方框，或拖动滑块），看它的草稿：从文本哪里抄来，模型保留了哪几个，第一个被拒绝的又是哪个。要续写的文字可以是你的提示词，也可以切换成一份要照抄的清单：一段自我重复的文字。",
  ],
  "after-W-drafting": [
    "One read of the weights, several tokens, and the same text: where a text repeats itself, a few extra rows in a pass buy many fewer reads of the weights.",
    "读一遍权重，得到好几个词元，文字却一模一样：文本自我重复的地方，每一遍多算几行，就能少读好多遍权重。",
  ],
  "W-drafting.source": ["Text to continue", "要续写的文字"],
  "W-drafting.source.prompt": ["the prompt at the top", "页面顶部的提示词"],
  "W-drafting.source.list": ["a list to copy", "一份要照抄的清单"],
  "W-drafting.list-text": [
    "Copy the list exactly.\nList: apples, pears, plums, cherries, grapes, lemons, limes, figs.\nCopy: apples, pears,",
    "把下面的清单原样抄一遍。\n清单：苹果、梨、李子、樱桃、葡萄、柠檬、青柠、无花果。\n抄写：苹果、梨、",
  ],
  "W-drafting.new": ["New tokens", "新词元数"],
  "W-drafting.pass": ["Pass", "第几遍"],
  "W-drafting.stream": ["The text, pass by pass", "逐遍写出的文字"],
  "W-drafting.pass-aria": [({ tokens }) => `pass {n}: ${plural(tokens, "1 token", "{tokens} tokens")}`,
    "第 {n} 遍：{tokens} 个词元"],
  "W-drafting.legend.prompt": ["the prompt", "提示词"],
  "W-drafting.legend.kept": ["drafted and kept", "草稿中被保留的"],
  "W-drafting.legend.own": ["chosen by the model itself, one per pass", "模型自己选的，每遍一个"],
  "W-drafting.legend.copied": ["where the chosen pass's draft was copied from", "所选这一遍的草稿从这里抄来"],
  "W-drafting.legend.matched": ["the tokens looked up, and where they stood before", "被查找的词元，以及它们先前出现的位置"],
  "W-drafting.head": [({ rows }) => `Pass {n} of {passes}: ${plural(rows, "1 row", "{rows} rows")}, one read of the weights`,
    "第 {n} 遍（共 {passes} 遍）：{rows} 行，读一遍权重"],
  "W-drafting.prompt-pass": [
    ({ rows }) => `The prompt's ${plural(rows, "token went", "{rows} tokens went")} through the model together, a row each; the last row's scores gave the first new token, {piece}.`,
    "提示词的 {rows} 个词元一起送进模型，每个一行；最后一行的分数给出了第一个新词元 {piece}。",
  ],
  "W-drafting.plain-pass": ["No draft: one row, the last token, and one new token, {piece}.",
    "没有草稿：只有一行，也就是最后那个词元，得到一个新词元 {piece}。"],
  "W-drafting.plain-end": ["No draft: one row, the last token, and the model chose to end its text.",
    "没有草稿：只有一行，也就是最后那个词元，模型选择在这里结束文字。"],
  "W-drafting.lookup": [
    ({ n, k }) => `The text so far ended in {tail}; the same ${plural(n, "token", "{n} tokens")} stood earlier (shaded above), and the ${plural(k, "token", "{k} tokens")} after ${plural(n, "it", "them")} there (outlined) became the draft:`,
    "到这里为止，文本以 {tail} 结尾；同样的 {n} 个词元先前出现过（上面涂黄的地方），跟在它们后面的 {k} 个词元（虚线框出的）成了草稿：",
  ],
  "W-drafting.lookup-loop": [
    ({ n, k }) => `The text so far ended in {tail}; the same ${plural(n, "token", "{n} tokens")} stood just before (shaded above), and what followed ${plural(n, "it", "them")} there runs on to the end of the text (outlined): the text is going round a loop, so that stretch and its next turns, ${plural(k, "1 token", "{k} tokens")}, became the draft:`,
    "到这里为止，文本以 {tail} 结尾；同样的 {n} 个词元刚刚出现过（上面涂黄的地方），跟在它们后面的那一段一直延伸到文本末尾（虚线框出的）：文本在兜圈子，所以这一段再接着转下去，共 {k} 个词元，成了草稿：",
  ],
  "W-drafting.kept-all": [
    ({ k, gained }) => `The model would have chosen every one of them: it kept ${plural(k, "it", "all {k}")}, and the last row gave its own next token, {piece}: ${plural(gained, "1 token", "{gained} tokens")} from one read.`,
    "模型自己也会逐个选出它们：{k} 个全部保留，最后一行还给出了模型自己的下一个词元 {piece}：读一遍权重，得到 {gained} 个词元。",
  ],
  "W-drafting.kept-all-end": [
    ({ k }) => `The model would have chosen every one of them: it kept ${plural(k, "it", "all {k}")}, and on the last row it chose to end its text.`,
    "模型自己也会逐个选出它们：{k} 个全部保留，到了最后一行，它选择结束文字。",
  ],
  "W-drafting.refused": [
    ({ kept, gained }) => `${kept === 0 ? "The model did not choose the draft's first token, {refused}" : `The model chose the first ${plural(kept, "one", "{kept}")} too, but not {refused}`}: in its place it chose {piece}, ${plural(gained, "1 token", "{gained} tokens")} from one read. The rows after the refused token are thrown away.`,
    ({ kept }) => `${kept === 0 ? "模型没有选草稿的第一个词元 {refused}" : "前 {kept} 个模型也会选，但 {refused} 不会"}：它在这个位置选了 {piece}，读一遍权重得到 {gained} 个词元。被拒绝的词元之后的那几行直接丢掉。`,
  ],
  "W-drafting.refused-end": [
    ({ kept }) => `${kept === 0 ? "The model did not choose the draft's first token, {refused}" : `The model chose the first ${plural(kept, "one", "{kept}")} too, but not {refused}`}: in its place it chose to end its text.`,
    ({ kept }) => `${kept === 0 ? "模型没有选草稿的第一个词元 {refused}" : "前 {kept} 个模型也会选，但 {refused} 不会"}：它在这个位置选择结束文字。`,
  ],
  "W-drafting.mark.kept": ["kept", "保留"],
  "W-drafting.mark.refused": ["refused", "拒绝"],
  "W-drafting.mark.dropped": ["not used", "未用"],
  "W-drafting.chart": ["Reads of the weights for the same {n} tokens", "同样 {n} 个词元要读几遍权重"],
  "W-drafting.axis": ["passes, each one read of the weights", "计算遍数（每遍读一次全部权重）"],
  "W-drafting.bar.drafting": ["with drafting", "带草稿"],
  "W-drafting.bar.plain": ["without drafting", "不带草稿"],
  "W-drafting.bar.passes": [({ n }) => plural(n, "1 pass", "{n} passes"), "{n} 遍"],
  "W-drafting.readout": [
    ({ tokens, saved }) => `${plural(tokens, "1 new token", "{tokens} new tokens")} in {passes} passes with drafting, {plain} without: ${saved === 0 ? "no read of the weights saved" : plural(saved, "1 read of the weights saved", "{saved} reads of the weights saved")}.`,
    ({ saved }) => `{tokens} 个新词元，带草稿用了 {passes} 遍，不带草稿用了 {plain} 遍：${saved === 0 ? "一遍权重读取也没省下" : "省下了 {saved} 遍权重读取"}。`,
  ],
  "W-drafting.same": [
    ({ n }) => `The run without drafting chose the same ${plural(n, "token", "{n} tokens")}, compared one by one: drafting changed how many passes the text took, never the text.`,
    "不带草稿的那次运行选出了同样的 {n} 个词元，逐个比对过：草稿改变的是这段文字算了几遍，而不是文字本身。",
  ],
  "W-drafting.differ": [
    "The run without drafting parts from this one at new token {k}: drafting must never change the text, so this is a fault of the engine.",
    "不带草稿的那次运行在第 {k} 个新词元处和这次分开了：草稿绝不应该改变文字，所以这是引擎的错误。",
  ],
  "W-drafting.drafts": [
    ({ drafts, refused }) => `${plural(drafts, "One", "{drafts}")} of the {decode} passes after the prompt checked a draft copied from the text itself: {drafted} drafted tokens, {kept} kept ({share}). ${refused === 0 ? "No draft was cut short." : `${plural(refused, "One draft was", "{refused} drafts were")} cut short at a token the model would not have chosen, and that token's row gave the model's own choice instead.`}`,
    ({ refused }) => `提示词之后的 {decode} 遍里，有 {drafts} 遍验证了从文本本身抄来的草稿：草稿共 {drafted} 个词元，保留 {kept} 个（{share}）。${refused === 0 ? "没有一份草稿被中途截断。" : "有 {refused} 份草稿在模型自己不会选的词元处被截断，那个词元所在的行给出了模型自己的选择。"}`,
  ],
  "W-drafting.no-drafts": [
    "No pass after the prompt checked a draft: the text offered nothing to copy, or drafting had not yet paid here, so every pass gave one token.",
    "提示词之后没有哪一遍验证过草稿：要么文本里没有可抄的，要么草稿在这里还没显出好处，所以每一遍只得到一个词元。",
  ],
  "W-drafting.policy": [
    "The engine drafts only as far as it expects a draft to pay, from how often this request's drafts were kept and what an extra row adds to a pass (here held at a quarter of a pass, so that a text gives the same passes on any machine; a server measures its own): at first rarely and short, longer as its drafts are kept.",
    "引擎只在预计划算的范围内起草，依据是这个请求的草稿被保留得多频繁、多一行会让一遍计算多花多少（这里固定为一遍的四分之一，好让同一段文字在任何机器上都走同样的几遍；服务器则按自己实测的来）：起初很少起草、草稿也短，草稿越常被保留，起草就越长。",
  ],
  "W-drafting.rows": [
    "The price is arithmetic: {rows} rows computed with drafting, {plain} without, the prompt's {p} included. The {extra} extra are the rows of refused draft tokens, computed and thrown away.",
    "代价是运算：带草稿算了 {rows} 行，不带草稿算了 {plain} 行，都含提示词的 {p} 行。多出来的 {extra} 行属于被拒绝的草稿词元，算完就扔掉了。",
  ],
  "W-drafting.rows-same": [
    "Every drafted token was kept, so drafting cost no extra rows: {rows} both ways, the prompt's {p} included.",
    "每个草稿词元都被保留了，所以草稿没有多花一行运算：两种方式都是 {rows} 行，含提示词的 {p} 行。",
  ],
  "W-drafting.metrics-agree": [
    "The engine's own {metrics} counted the same: {drafts} drafts, {drafted} draft tokens, {kept} accepted.",
    "引擎自己的 {metrics} 给出同样的计数：草稿 {drafts} 份，草稿词元 {drafted} 个，接受 {kept} 个。",
  ],
  "W-drafting.metrics-differ": [
    "The engine's own {metrics} counted otherwise: {drafts} drafts, {drafted} draft tokens, {kept} accepted.",
    "引擎自己的 {metrics} 给出的计数不一样：草稿 {drafts} 份，草稿词元 {drafted} 个，接受 {kept} 个。",
  ],
  "W-drafting.ended": [
    ({ n }) => `The model chose to end its text after ${plural(n, "1 new token", "{n} new tokens")}.`,
    "模型在写出 {n} 个新词元之后选择结束文字。",
  ],
  "W-drafting.no-native": [
    "Here this model runs without the engine's native step, and only that step checks drafts: both runs took one pass per token.",
    "在这里，这个模型没有用上引擎的原生计算步骤，而只有这个步骤验证草稿：两次运行都是每个词元一遍。",
  ],
  "W-drafting.try-list": [
    "This prompt's continuation repeats little, so there was little to copy: choose “a list to copy”.",
    "这个提示词的续写很少重复，能抄的不多：选“一份要照抄的清单”试试。",
  ],
  "W-drafting.each": ["Each pass", "每一遍"],
  "W-drafting.col.pass": ["pass", "遍"],
  "W-drafting.col.rows": ["rows", "行数"],
  "W-drafting.col.draft": ["draft", "草稿"],
  "W-drafting.col.kept": ["kept", "保留"],
  "W-drafting.col.own": ["the model's own token", "模型自己选的词元"],
  "W-drafting.col.added": ["tokens added", "添上的词元"],
  "W-drafting.none": ["none", "无"],
  "W-drafting.end": ["end of text", "结束"],
  "W-drafting.prompt-row": ["the prompt", "提示词"],
};
