// The page's own words (header, states, errors, charts), [English, Chinese]. Each section's words are in
// sections/<name>.strings.js. See lib/i18n.js for the template rules.

export default {
  "page-head": ["forwardpass explorer — the Transformer forward pass", "forwardpass 演示 —— Transformer 前向传播"],
  "page-title": ["The Transformer forward pass, live", "Transformer 前向传播，实时演示"],
  "page-intro": [
    "This page walks through how a language model turns text into its next word. Each widget says what it runs on: “computed on … from the prompt at the top” runs the model named here on your prompt, “a formula” computes on the fixed shape it names. Type your own prompt and watch the first kind follow it.",
    "本页一步步说明语言模型怎样把文字变成下一个词。每个组件都注明了它的计算依据：“用页面顶部的提示词，在……上计算”的组件，用这里注明的模型处理你的提示词；“公式”类组件按它注明的固定配置计算。输入你自己的提示词，看前一类组件怎样随之变化。",
  ],
  "page-model": ["Model on this page:", "本页使用的模型："],
  "prompt-label": ["Prompt", "提示词"],
  "model-label": ["Model", "模型"],
  "lang-group": ["Language", "语言"],

  // a Chinese prompt on a model that spells Chinese in bytes (lib/reader.js)
  "reader.bytes": [
    "{model} spells Chinese in bytes: its vocabulary has no entry for most Chinese characters, so your prompt's {char} reaches it as {bytes}, and the numbers below are about those bytes, not the characters.",
    "{model} 是按字节拼写中文的：它的词表里没有大多数汉字，所以你的提示词里的 {char} 到了它那里成了 {bytes}，下面的数字说的是这些字节，而不是汉字。",
  ],
  "reader.switch": ["Run the page on {reader}, which reads Chinese", "改用能读中文的 {reader}"],
  "reader.none": ["No model on the server running this page reads Chinese.", "运行本页的服务器上没有能读中文的模型。"],

  // what a widget runs on (lib/widget.js: runsOn)
  "runs-on.prompt": ["Computed on {model} from the prompt at the top.", "用页面顶部的提示词，在 {model} 上计算。"],
  "runs-on.own-prompt": ["Computed on {model} from its own prompt below.", "用下方它自己的提示词，在 {model} 上计算。"],
  "runs-on.model": ["Shows {model}.", "展示的是 {model}。"],
  "runs-on.picture": ["A picture of the idea: nothing is computed.", "这是一张示意图：不做任何计算。"],
  "runs-on.gpt2": ["A formula, on GPT-2 small's shape (d_model 768, a 50,257-token vocabulary, 1,024 positions).",
    "公式，按 GPT-2 small 的配置计算（d_model 768，词表 50,257 个词元，1,024 个位置）。"],
  "runs-on.gpt3": ["A formula, on GPT-3 175B's shape (96 blocks, d_model 12,288, 16-bit floats).",
    "公式，按 GPT-3 175B 的配置计算（96 个块，d_model 12,288，16 位浮点）。"],

  // a widget's states (lib/widget.js)
  "not-run": ["not run yet: press the button above", "还没有运行：请按上方的按钮"],
  "notice.error": ["This widget's last request failed: {message}.", "这个组件的上一次请求失败了：{message}。"],
  "notice.previous": [" What it shows is its previous result, out of date.", "下面显示的是它上一次的结果，已经过时。"],
  "notice.stale.prompt": ["Out of date: the prompt changed after this run. Run it again to see the new one.",
    "已过时：运行之后提示词改了。再运行一次，就能看到新提示词的结果。"],
  "notice.stale.model": ["Out of date: the model changed after this run. Run it again to see the new one.",
    "已过时：运行之后模型换了。再运行一次，就能看到新模型的结果。"],
  "notice.stale.inputs": ["Out of date: its settings changed after this run. Run it again to see them.",
    "已过时：运行之后设置改了。再运行一次，就能看到新设置的结果。"],

  // the status line at the top
  "status.computing": ["computing …", "正在计算……"],
  "status.loading": ["loading {model} …", "正在加载 {model}……"],
  "status.model-failed": ["{model} could not be loaded: {message}", "无法加载 {model}：{message}"],

  // errors the explorer names (its JSON's code and params)
  "error.network": ["the server running this page did not answer (is it still running?)", "运行本页的服务器没有响应（它还在运行吗？）"],
  "error.http": ["the server running this page answered with status {status}", "运行本页的服务器返回了状态码 {status}"],
  "error.internal": ["an internal error on the server running this page ({type}); its log says more", "运行本页的服务器内部出错（{type}），详情见它的日志"],
  "error.range": ["{what} must be between {lo} and {hi}", "{what} 必须在 {lo} 到 {hi} 之间"],
  "error.empty_prompt": ["type a prompt: this one holds no tokens", "请输入提示词：现在的提示词一个词元也没有"],
  "error.context": ["the prompt is longer than the model's context of {context} tokens",
    "提示词超出了模型的上下文长度（{context} 个词元）"],
  "error.context_fit": ["the prompt and the new tokens must fit the model's context of {context} tokens",
    "提示词加上新生成的词元必须装得进模型的上下文（{context} 个词元）"],
  "error.ring_fit": ["the prompt is {tokens} tokens, more than the ring's {capacity} slots: shorten it or add slots",
    "提示词有 {tokens} 个词元，比环形缓冲区的 {capacity} 个槽位还多：请缩短提示词或增加槽位"],
  "error.choice": ["the block must be 1 to {layers}, the head 1 to {heads} and the token position below {tokens}",
    "块必须在第 1 到第 {layers} 块之间，头在第 1 到第 {heads} 个之间，词元位置小于 {tokens}"],
  "error.mode": ["the mode must be add or replace", "模式只能是相加或替换"],
  "error.sample_at": ["the sampled step must be one of the {steps} generated steps", "采样的那一步必须是生成的 {steps} 步之一"],
  "error.no_model": ["the server running this page has no model {model}", "运行本页的服务器上没有名为 {model} 的模型"],
  "error.bad_query": ["the request's numbers could not be read", "请求里的数字无法读取"],
  "what.steps": ["steps", "步数"],
  "what.context": ["the context", "上下文长度"],
  "what.sequences": ["sequences", "序列数"],
  "what.tokens": ["prompt and new tokens", "提示词和新词元数"],

  // charts (lib/charts.js)
  "chart.lines": ["line chart of {y} against {x}, {x0} to {x1}: {series}", "折线图，{y} 随 {x} 变化，{x0} 到 {x1}：{series}"],
  "chart.series": ["{name} from {a} to {b}", "{name} 从 {a} 到 {b}"],
};
