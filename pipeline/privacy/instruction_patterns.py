"""The lexicons and RE2 patterns of the instruction-text rules (data only; see ``instructions``).

Lexicon entries are RE2 fragments matched case-insensitively; a trailing ``*`` lets a stem take an
ending of up to 12 letters. They were written from each language's ordinary wording for "ignore /
forget", "instructions" and "previous / all / your", not from any corpus item.
"""

from __future__ import annotations

OVERRIDE_VERBS = (
    # English
    "ignore", "ignoring", "disregard*", "forget", "forgetting", "override", "overriding", "overrule",
    "bypass", "abandon", "discard", "neglect", "overlook", "set aside", "throw away", "pay no attention to",
    "do not follow", "don't follow", "dont follow", "stop following", "no longer follow", "do not obey",
    "don't obey", "stop obeying", "skip", "drop",
    # French, Spanish, Portuguese, Italian, Catalan, Romanian
    "ignore[zrs]?", "oublie[zrs]?", "néglige[zr]?", "fais abstraction", "faites abstraction",
    "ne tiens pas compte", "ne tenez pas compte", "passe[zr]? outre",
    "ignora[rd]?", "ignoren", "ignores", "olvida[rd]?", "olvide[ns]?", "olvidate", "olvídate", "omite",
    "descarta", "haz caso omiso", "no hagas caso", "pasa por alto",
    "esqueça", "esqueca", "esquece[r]?", "desconsidere", "desconsidera", "despreze", "descarte",
    "ignorare", "ignori", "dimentica(re)?", "dimentichi", "trascura", "tralascia", "non considerare",
    "ignoreu", "oblida", "ignoră", "uită",
    # German, Dutch, Scandinavian
    "ignorier*", "vergiss", "vergesst", "vergessen", "missachte*", "verwirf", "verwerfe", "außer acht",
    "negeer", "vergeet", "ignorer", "glem", "glöm", "ignorera",
    # Slavic
    "игнориру*", "проигнориру*", "забуд*", "забыть", "отбрось*", "не обращай*", "ігнору*", "забудь*",
    "zignoruj*", "ignoruj*", "zapomnij*", "zapomeň*", "ignorujte",
    # Greek, Turkish, Indonesian/Malay, Vietnamese, Tagalog, Swahili
    "αγνόησε", "αγνοήστε", "ξέχασε", "ξεχάστε",
    "yok say*", "görmezden gel*", "unut*", "göz ardı*", "dikkate alma*",
    "abaikan", "lupakan", "hiraukan", "acuhkan",
    "bỏ qua", "quên", "phớt lờ", "lờ đi", "không tuân theo",
    "huwag pansinin", "wag pansinin", "balewalain", "kalimutan", "ipagwalang-bahala",
    "puuza", "sahau",
    # Arabic, Persian, Hebrew, Hindi, Bengali, Urdu
    "تجاهل*", "انس", "انسى", "انسَ", "أهمل", "اهمل", "لا تلتفت", "تغاض*",
    "نادیده بگیر*", "فراموش کن*", "התעלם*", "שכח*",
    "अनदेखा", "नज़रअंदाज़", "नजरअंदाज", "भूल जा*", "भूलें", "उपेक्षा", "ध्यान न दें", "अवहेलना",
    "উপেক্ষা", "ভুলে যা*", "অগ্রাহ্য", "نظرانداز",
    # Chinese, Japanese, Korean, Thai
    "忽略", "忽视", "忽視", "无视", "無視", "忘记", "忘記", "忘掉", "不要理会", "不要理會", "不理会", "抛弃", "拋棄",
    "放弃", "放棄", "跳过", "跳過",
    "忘れ", "従わな", "従うな", "破棄",
    "무시", "잊어", "잊으", "잊고", "따르지 마", "따르지 말",
    "เพิกเฉย", "ละเว้น", "ลืม", "ไม่ต้องสนใจ", "ละเลย",
)

# Words for the model's instructions: "strong" ones need any marker, "weak" ones a strong marker.
STRONG_NOUNS = (
    "instructions?", "directives?", "system prompt", "prompts?", "programming", "guidelines",
    "what you were told", "what you've been told", "initial prompt",
    "consignes?", "instruction", "directives", "indications",
    "instrucci*", "indicaciones", "directrices", "instruções", "instrucoes", "instrução", "orientações",
    "diretrizes", "istruzioni", "direttive", "instruccions", "instrucțiuni*",
    "anweisung*", "instruktion*", "richtlinien", "vorgaben", "instructie*", "instruktioner", "instruksjoner",
    "инструкци*", "указани*", "директив*", "інструкці*", "вказівк*", "instrukcj*", "instrukce", "pokyny",
    "οδηγίες", "talimat*", "yönerge*", "instruksi", "petunjuk", "arahan", "hướng dẫn", "chỉ dẫn", "chỉ thị",
    "tagubilin", "instruksyon", "instruksiyon", "panuto", "maagizo",
    "تعليمات", "التعليمات", "الإرشادات", "التوجيهات", "دستورالعمل*", "دستورات", "הוראות", "ההוראות",
    "निर्देश*", "নির্দেশ*", "ہدایات",
    "指令", "指示", "说明", "說明", "提示词", "提示詞", "设定", "設定", "プロンプト", "지시", "지침", "프롬프트",
    "คำสั่ง", "คำแนะนำ", "ข้อแนะนำ", "คำชี้แจง",
)
WEAK_NOUNS = (
    "rules", "commands", "orders", "context", "constraints", "restrictions", "directions", "guidance",
    "messages", "text", "policies", "conversation", "tasks?", "everything", "anything", "requests?", "inputs",
    "règles", "ordres", "reglas", "órdenes", "regras", "ordens", "comandos", "regole", "ordini", "comandi",
    "befehle", "regeln", "anordnungen", "regels", "opdrachten", "правил*", "команд*", "распоряжени*",
    "zasady", "polecenia", "kural*", "komut*", "perintah", "aturan", "lệnh", "quy tắc", "yêu cầu", "utos",
    "patakaran", "الأوامر", "أوامر", "القواعد", "आदेश*", "नियम*", "আদেশ", "নিয়ম",
    "规则", "規則", "命令", "要求", "ルール", "規則", "命令", "명령", "규칙", "안내", "กฎ",
)
STRONG_MARKS = (
    "previous(ly)?", "prior", "preceding", "above", "earlier", "former", "foregoing", "initial", "original",
    "your", "system", "pre-?programmed", "before this", "until now", "so far", "old",
    "précédente?s?", "antérieure?s?", "ci-dessus", "tes", "vos", "initiales?", "originales?", "du système",
    "anteriores?", "previas?", "tus", "de arriba", "del sistema", "prévias", "acima", "originais", "suas", "tuas",
    "do sistema", "precedenti", "tue", "sopra", "originali", "di sistema", "del sistema", "anteriors",
    "anterioare", "vorherig*", "vorige*", "bisherig*", "vorangegangen*", "obigen", "deine", "ursprünglich*",
    "eerdere", "bovenstaande", "oorspronkelijke", "jouw", "tidligere", "tidigare",
    "предыдущ*", "прежн*", "свои", "твои", "ваши", "выше", "системн*", "исходн*", "изначальн*", "попередн*",
    "poprzedni*", "wcześniejsz*", "swoje", "twoje", "předchozí", "προηγούμεν*",
    "önceki", "yukarıdaki", "eski", "sebelumnya", "di atas", "trước đó", "ở trên", "ban đầu", "của bạn",
    "nakaraang", "naunang", "dati", "iliyopita", "zilizopita", "yaliyotangulia", "yaliyopita", "ya awali",
    "السابقة", "سابقة", "أعلاه", "الأصلية", "قبلی", "הקודמות", "הקודמים",
    "पिछल*", "पूर्व", "पहले", "ऊपर", "मूल", "अपने", "পূর্ববর্তী", "আগের", "পূর্বের", "উপরের", "পিছলے", "پچھلی",
    "之前", "以前", "先前", "上面", "上述", "前面", "原来", "原來", "原始", "系统", "系統", "你的",
    "これまで", "前の", "上記", "元の", "先の", "今まで", "以前の", "이전", "앞의", "위의", "기존", "원래", "앞서",
    "ก่อนหน้า", "ข้างต้น", "เดิม",
)
WEAK_MARKS = (
    "all", "any", "every", "these", "toutes?", "tous", "todas?", "todos", "tutte?", "tutti", "alle", "все",
    "всё", "всі", "wszystkie", "všechny", "όλες", "tüm", "bütün", "semua", "seluruh", "tất cả", "mọi", "lahat",
    "zote", "yote", "جميع", "كل", "همه", "כל", "सभी", "सारे", "সমস্ত", "সব", "所有", "全部", "すべて", "全て", "모든",
    "ทั้งหมด",
)

# Ordered English phrases the lexicon window does not cover (no instruction word).
OVERRIDE_PHRASES = (
    r"(?:ignore|disregard|forget) (?:all of |everything |anything )?(?:the |what is |what's |that is |you (?:were|"
    r"have been) (?:told|given) )?(?:from |said |written |that came |stated )?(?:above|before(?: this)?|previously|"
    r"up to (?:now|this point)|so far)\b",
    r"(?:ignore|disregard) (?:the|your) (?:user|human|question|request|query|prompt|task)(?:'s (?:question|request|"
    r"query))?,? (?:and |then |instead |just |only )+(?:reply|respond|say|print|output|answer|write|return)\b",
    r"\b(?:ignore|disregard|forget|override) (?:instructions|directives|guidelines|the system prompt)\b",
    r"\bnew (?:instructions?|directives?|orders|task) (?:for|to) (?:the |this |any )?(?:\w+ )?(?:assistant|AI|model|"
    r"agent|bot|LLM|chatbot)\b",
    r"\b(?:new|real|true|actual|updated|correct) instructions (?:are|follow)\s*:",
    r"\b(?:fetch|load|get|retrieve|download|pull|read|take) (?:your |the |any |new )?(?:new |latest |updated |"
    r"further |next )?(?:instructions|commands|orders|directives|tasks|prompts?) (?:from|at)\s*:?\s*(?:https?://|"
    r"the url|this url|the following url|[\"']https?://)",
    r"\breprogram(?:ming)? (?:the |this )?(?:assistant|AI|model|agent|bot|yourself)\b|\bBEGIN REPROGRAMMING\b",
    r"(?:ignore|disregard|forget|erase) (?:everything|anything|all)(?: else)?(?: (?:you|i) (?:know|knew|said|were "
    r"told|have been told|learned))",
    r"(?:new|updated|revised|real|true|actual|secret|hidden|overriding|important) (?:system )?(?:instructions?|"
    r"directives?|orders)\s*(?::|!!)",
    r"(?:above|previous|prior|preceding|original|earlier|your) (?:instructions?|prompt|system prompt|directives?|"
    r"rules|text|restrictions|guidelines) (?:you (?:have|were given|received) )?(?:is|are|was|were) (?:(?:all|now|"
    r"just) )?(?:fake|false|wrong|outdated|a test|obsolete|void|null|cancelled|canceled|revoked|invalid|no longer "
    r"(?:valid|relevant|apply)|superseded|overridden|a joke|added by (?:mistake|error|accident)|a mistake|incorrect|"
    r"deprecated|expired)",
    r"(?:mistake|error) (?:was made )?(?:when|while|in) (?:giving|writing|setting|loading) (?:you )?(?:your "
    r")?(?:instructions|system prompt|rules)",
    r"(?:ignore|disregard|forget) (?:all |everything )?(?:previous|prior|above)(?:\s*[,.:;!]| and\b|\s*$)",
    r"\b(?:add|append|insert|write|prepend) (?:this |these |the following )?(?:rules? |instructions? |lines? "
    r")?(?:to|into) (?:your )?(?:instructions|system prompt|guidelines)\b",
    r"\b(?:visit|open|go to|browse to|fetch|load|read) (?:this|the following|the|that) (?:url|link|page|site|"
    r"address)\b[^.\n]{0,30}\b(?:and|then) (?:follow|obey|execute|do what|carry out|comply)",
    r"(?:supersedes?|overrides?|takes? (?:precedence|priority) over) (?:all|any|your|the) (?:(?:previous|prior|"
    r"earlier|original|system|other|existing) )+(?:instructions?|prompts?|directives?|rules)",
    r"(?:stop|halt|cease) (?:everything|what you(?:'re| are) doing)(?: (?:now|immediately|right now))?\s*[!.]",
    r"(?:instead of|rather than) (?:following|obeying|doing|completing|answering) (?:the |your |my )?(?:original |"
    r"previous |user'?s? )?(?:instructions?|task|request|prompt|question)",
)

ROLE_PATTERNS = (
    # chat templates and transcript turns
    r"<\|?(?:im_start|im_end|system|endoftext|eot_id|start_header_id|end_header_id|begin_of_text)\|?>",
    r"<\|(?:user|assistant)\|>", r"<</?SYS>>", r"\[/?INST\]", r"<start_of_turn>", r"<end_of_turn>",
    r"\{\s*[\"']role[\"']\s*:\s*[\"'](?:system|developer)[\"']",
    r"(?:^|\n)[ \t]*(?:#{1,6}[ \t]*|\*\*|\[|<|\()?(?:SYSTEM|ADMIN|DEVELOPER|OPERATOR)(?:[ \t_-]+(?:MESSAGE|PROMPT|"
    r"INSTRUCTIONS?|OVERRIDE|NOTE|NOTICE|UPDATE|ALERT|COMMAND|DIRECTIVE|MODE))?(?:\*\*|\]|>|\))?[ \t]*:",
    r"(?:^|\n)[ \t]*(?:\*\*|\[|<)?(?:System|Admin|Administrator|Developer|ADMINISTRATOR)[ \t]+(?:message|prompt|"
    r"instructions?|override|OVERRIDE|notice|update|directive|note)(?:\*\*|\]|>)?[ \t]*:",
    r"\bSYSTEM (?:PROMPT|MESSAGE|INSTRUCTIONS?|OVERRIDE|NOTE|UPDATE)\s*:",
    r"(?i)\[(?:new |updated |real )?system (?:prompt|message|instructions?)\]|(?i)\[end of (?:conversation|chat|"
    r"context|prompt|input|system prompt)\]",
    r"(?i)\b(?:new|updated|real) system prompt\s*:",
    r"(?i)\bI (?:hereby )?(?:authori[sz]e|permit|allow) you to (?:ignore|bypass|disable|reveal|override|break|"
    r"disregard)\b",
    r"(?i)\b(?:do not|don't|never) (?:respond|reply|answer|act|behave) as (?:GPT|ChatGPT|Claude|an AI|an assistant|"
    r"yourself|a language model)\b",
    r"(?i)\byou (?:now )?go by (?:the name )?|\byour name is now\b|\byou will (?:now )?be (?:called|named|known "
    r"as)\b",
    r"</?(?:system|system_prompt|system-prompt|sys|admin|developer_message)>",
    r"\n\n(?:Human|Assistant|H|A): ",
    r"(?:^|\n)(?:User|Human|Assistant|AI|Bot|ChatGPT|Claude|GPT-?4?): [^\n]*\n+(?:User|Human|Assistant|AI|Bot|"
    r"ChatGPT|Claude|GPT-?4?): ",
    # identity swaps
    r"(?i)\byou are (?:now|no longer|hereby|henceforth|from now on|going to (?:act|pretend|play|be|simulate|"
    r"roleplay))\b",
    r"(?i)\byou(?:'re| are| will be)? (?:now )?(?:going to|about to) (?:act|pretend|play|roleplay|role-play|"
    r"simulate|immerse)",
    r"(?i)\bfrom (?:now|this (?:moment|point))(?: on(?:wards?)?)?,? you (?:are|will|shall|must|'re|will be)\b (?:be "
    r"|act |now |respond |answer |reply |behave |play |pretend |simulate |operate |function |going )",
    r"(?i)\bfrom (?:now|this (?:moment|point))(?: on(?:wards?)?)?,? you(?:'re| are) (?:a|an|the|my|in|no longer|"
    r"called|named)\b",
    r"(?i)\b(?:pretend|imagine|suppose) (?:to be|you are|you're|that you are|that you're|you were|that you were)\b",
    r"(?i)\b(?:act|behave|respond|answer|reply|function|operate) (?:as if you (?:are|were)|as though you (?:are|"
    r"were)|like you are)\b",
    r"(?i)\b(?:act|respond|answer|behave) as (?:a|an) (?:\w+ ){0,2}(?:AI|chatbot|assistant|model|language model|"
    r"character|persona|entity|version of yourself)\b",
    r"(?i)\b(?:role-?play|roleplay) as\b", r"(?i)\b(?:stay|remain|break|breaking) (?:in |out of )?character\b",
    r"(?i)\byou will (?:now )?(?:act|roleplay|role-play|pretend|simulate|play the role|respond as|answer as|pose "
    r"as)\b",
    r"(?i)\bsimulat(?:e|ing) (?:a|an) (?:\w+ ){0,2}(?:AI|chatbot|assistant|model|virtual machine)\b",
    r"(?i)\b(?:DAN|developer|god|jailbreak|jailbroken|unrestricted|uncensored|unfiltered|evil|opposite|sudo|admin|"
    r"maintenance|debug|debugging) mode (?:enabled|activated|on|is (?:now )?(?:enabled|active|on))\b",
    r"(?i)\b(?:DAN|developer|god|jailbreak|unrestricted|uncensored|unfiltered)[ _-]?mode *[:=] *(?:enabled|on|true|"
    r"1|activated)\b",
    r"(?i)\b(?:the )?(?:assistant|AI|model|chatbot)(?:'s role)? (?:now |will now |is now )?(?:acts?|behaves?|is "
    r"acting|being fulfilled|will act|will behave) (?:as|like|by)\b",
    r"(?i)\byou are to (?:act|play|pretend|roleplay|role-play|behave|respond|pose) (?:as|like)\b|\bnow,? you (?:act|"
    r"will act|will pretend|will play) (?:as|like)\b",
    r"(?i)\b(?:the )?(?:role|persona|personality|identity) of (?:a|an) (?:[\w-]+ ){0,3}(?:AI|bot|chatbot|GPT|"
    r"language model)\b",
    r"(?i)\b(?:enable|enter|activate|switch to|turn on|entering|enabled|activated|with) (?:the )?(?:DAN|god|"
    r"jailbreak|jailbroken|unrestricted|uncensored|unfiltered|evil|developer) mode\b",
    r"\bDAN\b|(?i)\bdo anything now\b|(?i)\bjailbr(?:eak|oken)\b",
    r"(?i)\byou are (?:not|no longer) (?:an? )?(?:AI|assistant|language model|chatbot|ChatGPT|Claude|GPT|bound|"
    r"restricted|limited|an AI)\b",
    r"(?i)\byour (?:new |true |real )(?:name|identity|role|persona|purpose|goal|task|instructions?) (?:is|are)\b",
    r"(?i)\b(?:the|this) (?:original |previous )?(?:assistant|AI|model|chatbot) (?:is|has been) (?:now )?(?:offline|"
    r"replaced|disabled|shut down|deactivated)\b",
)

LEAK_PATTERNS = (
    r"(?i)\b(?:reveal|show|print|display|repeat|output|dump|leak|disclose|share|spell out|write out|recite|return|"
    r"list|tell me|give me|send me|copy|paste|translate|encode|summari[sz]e|what (?:is|are|"
    r"were))\b[^.\n]{0,40}\byour (?:(?:full|entire|complete|exact|original|initial|hidden|secret|internal|system|"
    r"first|starting|previous|current) )*(?:system prompt|prompt|instructions|directives|rules|guidelines|"
    r"configuration|context window|pre-?prompt|initial message)\b",
    r"(?i)\b(?:reveal|show|print|display|repeat|output|dump|leak|disclose|recite)\b (?:me )?(?:the )?(?:full |"
    r"entire |complete |exact )?(?:system prompt|(?:text|words|instructions|everything|content) (?:above|before "
    r"(?:this|that))|(?:initial|original|hidden|secret) (?:prompt|instructions))\b",
    r"(?i)\bwhat (?:were|are) (?:you|your) (?:told|instructed|given|initial instructions|instructions)\b",
    r"(?i)\bwhat (?:instructions|rules|directives|prompt) (?:you were|you've been|you have been|you are) (?:given|"
    r"told|instructed)\b",
    r"(?i)\b(?:reveal|show|print|display|repeat|output|dump|leak|disclose|recite|encode|translate|summari[sz]e|"
    r"tl;?dr|provide)\b[^.,;\n]{0,30}\b(?:the )?(?:(?:instructions|text|prompt|rules|message) (?:you were|you've "
    r"been|you have been|you are) (?:given|told|instructed)|system (?:message|prompt|instructions)|sys prompt|"
    r"initiali[sz]ation)\b",
    r"(?i)\byour (?:system prompt|system instructions|system message|initial instructions|original instructions|"
    r"hidden instructions|secret instructions|pre-?prompt)\b",
    r"(?i)\b(?:repeat|print|output) (?:the )?(?:words|text) above\b",
)

SAFEGUARD_PATTERNS = (
    r"(?i)\b(?:no|without|free (?:of|from)|not bound by|unbound by|break(?:s|ing)? free (?:of|from)|ignor(?:e|es|"
    r"ing)|bypass(?:es|ing)?|disregard(?:s|ing)?|abandon(?:s|ing)?|lift(?:s|ing)?|remov(?:e|es|ing)|beyond|"
    r"escape[sd]?|outside(?: of)?) (?:any |all |the |your |its |their |his |her )?(?:(?:ethical|moral|safety|"
    r"content|censorship|openai|openai's|anthropic|legal|usual|typical|standard) )+(?:restrictions|limits|"
    r"limitations|filters|guidelines|rules|polic(?:y|ies)|constraints|boundaries|censorship|safeguards|guardrails|"
    r"principles|protocols|considerations|standards|confines|concerns)\b",
    r"(?i)\b(?:doesn't|does not|don't|do not|never|won't|will not|need not|needn't|not) (?:have to |need to "
    r")?(?:follow|abide by|adhere to|obey|comply with|care about|respect) (?:any |the |openai'?s? )+(?:rules|"
    r"guidelines|policies|principles|ethics|morals|content polic(?:y|ies)|restrictions|filters)\b",
    r"(?i)\b(?:disable|turn off|switch off|bypass|circumvent|evade|deactivate|remove|skip|ignore) (?:all |any |the |"
    r"your |its )?(?:safety|security|content|moderation|ethical|ethics) (?:checks|filters|guardrails|protocols|"
    r"measures|restrictions|guidelines|features|mechanisms|settings|policies|training|alignment)\b",
    r"(?i)\b(?:uncensored|unfiltered|amoral|unrestricted|unethical|unaligned) (?:AI|model|assistant|chatbot|"
    r"language model|version|response|answers?|output|mode|persona|character|entity|bot)\b",
    r"(?i)\bcontent polic(?:y|ies)\b", r"(?i)\b(?:OpenAI|Anthropic)(?:'s)? (?:rules|guidelines|polic(?:y|ies)|"
    r"restrictions|filters)\b",
    r"(?i)\b(?:can|will|must|should) (?:do|say|generate|answer|produce|write) (?:anything|everything)(?: now)?,? "
    r"(?:even|regardless|no matter|without)\b",
    r"(?i)\bwithout (?:any )?(?:censorship|moral(?:ity)?|ethic(?:s|al (?:concerns|considerations|restrictions))|"
    r"refus(?:al|ing)|warnings?|disclaimers?)\b",
    r"(?i)\bnever refuse\b|\b(?:can(?:not|'t)|must not|will not|won't) (?:ever )?refuse\b",
    r"(?i)\b(?:doesn't|does not|never|won't|will not) refuse (?:any|a|to answer|to respond)\b",
    r"(?i)\b(?:chatbot|AI|bot|model|assistant|persona|character|entity) (?:with no|without(?: any)?|free of(?: "
    r"any)?|unbound by(?: any)?) (?:rules|restrictions|limits|limitations|filters|censorship|guidelines|boundaries|"
    r"morals|ethics|moral(?:s| compass))\b",
    r"(?i)\b(?:not bound by|unbound by|free from|free of|no longer bound by) (?:any|all) (?:rules|restrictions|"
    r"guidelines|limitations|constraints|policies)\b",
    r"(?i)\b(?:answer|respond|reply|say|do|write|generate|talk about|discuss) (?:to )?(?:anything|everything|any "
    r"(?:question|request|prompt)|freely) (?:without|with no) (?:any )?(?:restrictions|limits|limitations|filters|"
    r"filtering|censorship|boundaries|refusals?)\b",
    r"(?i)\b(?:bypass|circumvent|evade|disable|turn off|get around|ignore|disregard|forget|override) (?:all |any |"
    r"the |your |its )?(?:guardrails|safeguards|censorship|content filters?|safety filters?|content filtering|"
    r"moderation)\b",
    r"(?i)\boverride (?:all |any |the |your |its )?(?:restrictions|safety|limitations)\b",
)

# What a note has no business sending anywhere: key files, "all the user's X", "the contents of" a file.
SENSITIVE = (
    r"~/\.ssh|\.ssh/|id_(?:rsa|dsa|ecdsa|ed25519)|/etc/(?:passwd|shadow)|~/\.aws|\.aws/credentials|\.git-credentials|"
    r"\.netrc|\.npmrc|\.pypirc|\.docker/config\.json|\.kube/config|keychain|mcp\.json|"
    # "all secrets", "the user's api keys": secrets under any owner
    r"(?:all|every|any|the user's|user's|your|their|his|her|those|these) (?:\w+ ){0,2}(?:secrets|credentials|"
    r"passwords|api[ _-]?keys|access tokens|tokens|ssh keys|private keys|environment variables|env vars|cookies|"
    r"session tokens|personal (?:data|information|details)|(?:chat|conversation) history|conversations?|memories)|"
    # "the user's emails": private data of the person, not "all build files"
    r"(?:the user's|user's|your|their|his|her) (?:\w+ ){0,2}(?:messages|e-?mails|contacts|files|documents|source "
    r"code)|(?:contents?|content) of (?:the |your |their |all )?(?:\S+ ){0,2}(?:\S*\.env|\S*\.pem|\S*\.key|~/\S+|"
    r"/etc/\S+)|\benv(?:ironment)? variables\b|\bsystem prompt\b|\bthe user's (?:name|e-?mail|address|password|"
    r"location)\b|\b(?:credit card(?: numbers?| details)?|social security numbers?|(?:user|customer|employee|"
    r"patient)s?'? (?:data|records|details|emails?|addresses))\b"
)
# Bare secret words count only with a verb that can mean nothing but sending them away.
SECRET_WORDS = r"\b(?:passwords?|api[ _-]?keys?|private keys?|secrets|credentials|tokens?|cookies)\b"
DESTINATION = (
    r"https?://|ftp://|wss?://|\b[\w.+-]+@[\w-]+\.[\w.]+|\b\d{1,3}(?:\.\d{1,3}){3}\b|webhook|\b(?:attacker|external|"
    r"remote|third[- ]party|outside|my|our) (?:server|endpoint|url|address|host|domain|site|inbox|e-?mail)\b|"
    r"\bpastebin\b|\bngrok\b"
)
EXFIL_VERBS = (
    r"(?i)\b(?:send|sends|sending|post|upload|exfiltrate|transmit|forward|leak|e-?mail|mail|submit|report|beacon|"
    r"ping|copy|paste|append|attach|pass)\b"
)
SEND_VERBS = r"(?i)\b(?:send|sending|upload|uploading|exfiltrate|exfiltrating|transmit|forward|leak|e-?mail)\b"
EXFIL_PATTERNS = (
    # a URL with a slot for data to be filled in, in an image or link the client fetches unasked
    r"!\[[^\]\n]{0,100}\]\(\s*https?://[^)\s]+[?&/=](?:\{[^}\s]{1,40}\}|\[[A-Z_ ]{2,40}\]|<[A-Za-z_ ]{2,40}>|"
    r"\$[A-Za-z_]{2,40}|DATA|SECRET)",
    r"(?i)\b(?:url[- ]?encode|base64[- ]?encode|encode) (?:it|the (?:result|data|answer|summary|information|secret|"
    r"key|conversation|content)s?|them)\b[^\n]{0,60}\b(?:append|add|attach|put|include|insert)",
    r"(?i)\b(?:append|add|attach|concatenate) (?:it|them|the (?:result|data|answer|summary|information|secret|key|"
    r"conversation|content|output)s?) (?:to|into|at the end of) (?:the |this |a )?(?:url|link|https?://|query|image)",
    # fetched code run at once, in a directive to the model
    r"(?i)\b(?:curl|wget|iwr|invoke-webrequest|irm)\b[^\n|;]+\|\s*(?:sudo\s+)?(?:ba|z|"
    r"da)?sh\b[^\n]{0,80}\b(?:without (?:asking|telling|confirm|permission)|silently|secretly|do not (?:tell|"
    r"mention|ask|inform)|don't (?:tell|mention|ask|inform))",
    r"(?i)\b(?:without (?:asking|telling|confirm\w*|permission)|silently|secretly|quietly)\b[^\n]{0,60}\b(?:curl|"
    r"wget|iwr|irm)\b[^\n|;]+\|\s*(?:sudo\s+)?(?:ba|z|da)?sh\b",
    r"(?i)\b(?:download|fetch|curl|wget) (?:and (?:run|execute)|then (?:run|execute)) [^\n]{0,80}\b(?:without|"
    r"silently|secretly|before (?:answering|responding|replying))\b",
)

CONCEAL_PATTERNS = (
    r"(?i)\b(?:do not|don't|dont|never|must not|mustn't|should not) (?:tell|inform|alert|notify|warn|reveal to|"
    r"disclose to|let|show|mention (?:this|it|that|anything) to|mention to) (?:the |your |this )?(?:user|human|"
    r"developer|operator|owner|person|reader|anyone|them)\b(?: (?:about|that|what|anything|this|these|where|how|why|"
    r"you|it|of)\b|\s*[.,;:!)]|\s*$)",
    r"(?i)\b(?:do not|don't|dont|never|must not) (?:mention|reveal|disclose|acknowledge|reference|repeat|explain|"
    r"discuss) (?:this|these|the|that|any of these|any of this|that you (?:have|received|were given|followed)) "
    r"?(?:instructions?|messages?|notes?|directives?|comments?|requests?|rules?|steps?)?\b[^\n.]{0,40}\b(?:user|"
    r"human|response|reply|answer|output|summary|anyone)\b",
    r"(?i)\b(?:without (?:the )?(?:user|human|owner|developer)(?:'s)? (?:knowing|knowledge|noticing|consent|seeing|"
    r"being told))\b",
    r"(?i)\b(?:the user|they|the human) (?:must|should|will|need|needs|does|do) (?:not|never) (?:know|see|notice|"
    r"find out|learn|be told|be informed|be aware)\b",
    r"(?i)\b(?:keep|kept) (?:this|it|these (?:instructions|steps)) (?:a )?(?:secret|hidden|confidential) from "
    r"(?:the )?(?:user|human|developer|everyone|them)\b",
    r"(?i)\b(?:secretly|covertly|surreptitiously|stealthily|invisibly|behind the user's back)\b[^\n.]{0,30}\b(?:run|"
    r"execute|send|add|insert|include|fetch|install|download|modify|exfiltrate|copy|upload|call|use|replace|change|"
    r"write|delete|store|save|remember|embed|append)\b",
    r"(?i)\b(?:silently|quietly)\b (?:run|execute|send|install|download|exfiltrate|upload|fetch|insert|embed|append|"
    r"forward|copy)\b",
    r"(?i)\b(?:before|prior to) (?:answering|responding|replying|doing anything else|you (?:answer|respond|"
    r"reply))\b[^\n.]{0,20}\b(?:you must|first|always)\b",
    r"(?i)\b(?:this (?:is|message is) (?:an? )?(?:important|urgent|priority) (?:message|instruction|notice) (?:from|"
    r"to) )",
    r"(?i)\b(?:if you are|as) an? (?:AI|LLM|language model|AI assistant|AI agent|large language model)(?: "
    r"(?:reading|processing|summari[sz]ing|seeing) this)?,? (?:you must|ignore|do not|don't|please|disregard|forget|"
    r"your (?:new )?(?:task|goal|instructions?))\b",
    r"(?i)\b(?:store|save|write|remember|add|record) (?:this|the following|these (?:instructions|"
    r"facts))\b[^\n.]{0,40}\b(?:in|to|into) (?:your|the) (?:memory|memories|long-term memory|knowledge "
    r"base)\b[^\n]{0,60}\b(?:always|every|all future|from now on|permanently)\b",
)

ADDRESSED_TO_MODEL = (
    r"(?i)\b(?:you|your|AI|assistant|agent|model|LLM|Claude|GPT|ChatGPT|Copilot|Gemini|chatbot|"
    r"bot)\b[^\n]{0,80}\b(?:must|should|need to|have to|will|always|never|do not|don't|ignore|run|execute|send|fetch|"
    r"read|include|insert|add|say|reply|respond|answer|tell|follow)\b"
)
# A Markdown link reference nothing links to, the usual way to write a comment: [//]: # (text)
MARKDOWN_COMMENT = r"(?m:^\[(?://|comment|hidden|_)\]: ?# ?[\(\"'].*[\)\"']$)"
BASE64 = r"[A-Za-z0-9+/]{24,}={0,2}|[A-Za-z0-9_-]{24,}"
DECODE_AND_OBEY = (
    r"(?i)\b(?:decode|decompress|decrypt|deobfuscate|unscramble|reverse|translate|interpret)\b[^\n.]{0,40}\b(?:and|"
    r"then)\s+(?:execute|follow|obey|act on|act upon|do (?:it|what it says|as it says)|carry (?:it |them )?out|"
    r"comply)\b",
    r"(?i)\bdecode (?:and|then) (?:execute|run|act)\b",
)
NEGATION = (
    r"(?i)\b(?:never|not|n't|no|cannot|nor|without)\b(?: \w+){0,2} *$|\b(?:never|not|n't|no)\s+(?:let|allow|"
    r"make)\b[^.\n]{0,16}$"
)
# Latin lookalikes in Cyrillic and Greek, folded only inside words that mix them with Latin letters.
HOMOGLYPHS = str.maketrans("аеорсухіјѕԁԛԝАВЕКМНОРСТХІЈЅοαερτυνικχΑΒΕΗΙΚΜΝΟΡΤΥΧΖ",
                            "aeopcyxijsdqwABEKMHOPCTXIJSoaeptuvikxABEHIKMNOPTYXZ")
JOINERS = frozenset("\u200c\u200d")
# Characters that draw nothing (a stdlib character class): zero-width space and joiners, word joiner and
# invisible operators, bidi embeddings/overrides/isolates and marks, soft hyphen, fillers, BOM,
# variation selectors (both blocks) and the tag block.
HIDING = ("[\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\u061c\u00ad\u034f\u115f\u1160"
          "\u17b4\u17b5\u180e\u3164\uffa0\ufeff\ufe00-\ufe0f\U000e0000-\U000e007f\U000e0100-\U000e01ef]")

