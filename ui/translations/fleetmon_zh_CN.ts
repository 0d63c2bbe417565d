<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="zh_CN">
<context>
    <name>AckDialog</name>
    <message>
        <source>Snooze finding</source>
        <translation>暂缓告警</translation>
    </message>
    <message>
        <source>Acknowledge finding</source>
        <translation>确认告警</translation>
    </message>
    <message>
        <source>why (ticket, planned fix…)</source>
        <translation>原因（工单、计划修复…）</translation>
    </message>
    <message>
        <source>Note:</source>
        <translation>备注：</translation>
    </message>
    <message>
        <source>Until:</source>
        <translation>截止：</translation>
    </message>
    <message>
        <source>Holds until the finding worsens (its severity rises).</source>
        <translation>在告警加重（级别升高）之前一直有效。</translation>
    </message>
</context>
<context>
    <name>Column</name>
    <message>
        <source>Node</source>
        <translation>节点</translation>
    </message>
    <message>
        <source>GPU</source>
        <translation>GPU</translation>
    </message>
    <message>
        <source>Model</source>
        <translation>型号</translation>
    </message>
    <message>
        <source>Vendor</source>
        <translation>厂商</translation>
    </message>
    <message>
        <source>Driver</source>
        <translation>驱动</translation>
    </message>
    <message>
        <source>Temp</source>
        <translation>温度</translation>
    </message>
    <message>
        <source>Power / limit</source>
        <translation>功耗 / 上限</translation>
    </message>
    <message>
        <source>Util</source>
        <translation>利用率</translation>
    </message>
    <message>
        <source>Last seen</source>
        <translation>最后上报</translation>
    </message>
    <message>
        <source>Status</source>
        <translation>状态</translation>
    </message>
    <message>
        <source>Health</source>
        <translation>健康</translation>
    </message>
    <message>
        <source>Intake</source>
        <translation>验收</translation>
    </message>
    <message>
        <source>Name</source>
        <translation>名称</translation>
    </message>
    <message>
        <source>Severity</source>
        <translation>级别</translation>
    </message>
    <message>
        <source>Kind</source>
        <translation>类型</translation>
    </message>
    <message>
        <source>Since</source>
        <translation>起始</translation>
    </message>
    <message>
        <source>Last evidence</source>
        <translation>最新证据</translation>
    </message>
    <message>
        <source>Action</source>
        <translation>处置建议</translation>
    </message>
    <message>
        <source>Evidence</source>
        <translation>证据</translation>
    </message>
    <message>
        <source>Acknowledged</source>
        <translation>已确认</translation>
    </message>
    <message>
        <source>Group</source>
        <translation>分组</translation>
    </message>
    <message>
        <source>Nodes</source>
        <translation>节点数</translation>
    </message>
    <message>
        <source>GPUs</source>
        <translation>GPU 数</translation>
    </message>
    <message>
        <source>CUDA driver / runtime</source>
        <translation>CUDA 驱动 / 运行时</translation>
    </message>
    <message>
        <source>VBIOS</source>
        <translation>VBIOS</translation>
    </message>
    <message>
        <source>Firmware</source>
        <translation>固件</translation>
    </message>
    <message>
        <source>Node / finding</source>
        <translation>节点 / 告警</translation>
    </message>
    <message>
        <source>Verdict</source>
        <translation>结论</translation>
    </message>
    <message>
        <source>Summary</source>
        <translation>摘要</translation>
    </message>
    <message>
        <source>Change</source>
        <translation>变化</translation>
    </message>
    <message>
        <source>Where</source>
        <translation>位置</translation>
    </message>
    <message>
        <source>When (UTC)</source>
        <translation>时间（UTC）</translation>
    </message>
    <message>
        <source>Reasons</source>
        <translation>原因</translation>
    </message>
    <message>
        <source>Slurm</source>
        <translation>Slurm</translation>
    </message>
    <message>
        <source>What</source>
        <translation>项目</translation>
    </message>
    <message>
        <source>Value</source>
        <translation>值</translation>
    </message>
    <message>
        <source>Cards</source>
        <translation>卡数</translation>
    </message>
    <message>
        <source>Days</source>
        <translation>天数</translation>
    </message>
    <message>
        <source>When</source>
        <translation>时间</translation>
    </message>
    <message>
        <source>Detail</source>
        <translation>详情</translation>
    </message>
</context>
<context>
    <name>FindingsTable</name>
    <message>
        <source>snoozed until {time}</source>
        <translation>暂缓至 {time}</translation>
    </message>
    <message>
        <source>acknowledged</source>
        <translation>已确认</translation>
    </message>
</context>
<context>
    <name>FindingsView</name>
    <message>
        <source>{node} GPU {index}</source>
        <translation>{node} GPU {index}</translation>
    </message>
    <message>
        <source>&lt;b&gt;{severity} {kind}&lt;/b&gt; on {where}</source>
        <translation>&lt;b&gt;{severity} {kind}&lt;/b&gt;，位于 {where}</translation>
    </message>
    <message>
        <source>All severities</source>
        <translation>全部级别</translation>
    </message>
    <message>
        <source>Critical</source>
        <translation>严重</translation>
    </message>
    <message>
        <source>Warning and worse</source>
        <translation>警告及以上</translation>
    </message>
    <message>
        <source>Info</source>
        <translation>提示</translation>
    </message>
    <message>
        <source>Show acknowledged</source>
        <translation>显示已确认</translation>
    </message>
    <message>
        <source>Acknowledge…</source>
        <translation>确认…</translation>
    </message>
    <message>
        <source>Snooze…</source>
        <translation>暂缓…</translation>
    </message>
    <message>
        <source>Clear ack</source>
        <translation>取消确认</translation>
    </message>
    <message>
        <source>Clear the acknowledgement or snooze of the selected finding</source>
        <translation>取消所选告警的确认或暂缓</translation>
    </message>
    <message>
        <source>Resolve…</source>
        <translation>处理完成…</translation>
    </message>
    <message>
        <source>Resolve as an operator&apos;s act: card replaced, reseated, driver updated …</source>
        <translation>记录运维处置：换卡、重新插拔、升级驱动 …</translation>
    </message>
    <message>
        <source>All kinds</source>
        <translation>全部类型</translation>
    </message>
    <message>
        <source>All groups</source>
        <translation>全部分组</translation>
    </message>
    <message>
        <source>(no group)</source>
        <translation>（无分组）</translation>
    </message>
    <message>
        <source>{shown} of {total} shown</source>
        <translation>显示 {shown} / {total}</translation>
    </message>
    <message>
        <source> · {count} acknowledged</source>
        <translation> · {count} 已确认</translation>
    </message>
    <message>
        <source> · nodes not heard from: {silent}</source>
        <translation> · 失联节点：{silent}</translation>
    </message>
</context>
<context>
    <name>FleetSummary</name>
    <message>
        <source>&lt;b&gt;1&lt;/b&gt; node ({verdicts})</source>
        <translation>&lt;b&gt;1&lt;/b&gt; 个节点（{verdicts}）</translation>
    </message>
    <message>
        <source>&lt;b&gt;{count}&lt;/b&gt; nodes ({verdicts})</source>
        <translation>&lt;b&gt;{count}&lt;/b&gt; 个节点（{verdicts}）</translation>
    </message>
    <message>
        <source>&lt;b&gt;1&lt;/b&gt; GPU</source>
        <translation>&lt;b&gt;1&lt;/b&gt; 张 GPU</translation>
    </message>
    <message>
        <source>&lt;b&gt;{count}&lt;/b&gt; GPUs</source>
        <translation>&lt;b&gt;{count}&lt;/b&gt; 张 GPU</translation>
    </message>
    <message>
        <source>open findings: {critical} critical, {warning} warning</source>
        <translation>未处理告警：{critical} 严重，{warning} 警告</translation>
    </message>
    <message>
        <source>{count} acknowledged</source>
        <translation>{count} 已确认</translation>
    </message>
    <message>
        <source>drivers: {drivers}</source>
        <translation>驱动：{drivers}</translation>
    </message>
</context>
<context>
    <name>FleetView</name>
    <message>
        <source>Filter: node, gpu[01-16] hostlist, model:A100, vendor:amd, driver:535, status:critical…</source>
        <translation>筛选：节点、gpu[01-16] 主机列表、model:A100、vendor:amd、driver:535、status:critical…</translation>
    </message>
    <message>
        <source>Group by group</source>
        <translation>按分组显示</translation>
    </message>
    <message>
        <source>reading database…</source>
        <translation>正在读取数据库…</translation>
    </message>
    <message>
        <source>Nodes are counted by their verdict (fail, warn, pass …, as the report judges them), one verdict per node.
Open findings are counted one by one: a node with three warnings is one warn node and three warning findings.</source>
        <translation>节点按结论计数（故障、警告、正常 …，与报告的判定一致），每个节点一个结论。
未处理告警逐条计数：一个有三条警告的节点算一个警告节点、三条警告告警。</translation>
    </message>
    <message>
        <source>Intake… (check {node} GPU {index})</source>
        <translation>验收…（检查 {node} GPU {index}）</translation>
    </message>
    <message>
        <source>Check this card against its spec and its model&apos;s fleet (PASS / CONDITIONAL / REJECT)</source>
        <translation>对照规格和同型号卡检查这张卡（PASS / CONDITIONAL / REJECT）</translation>
    </message>
    <message>
        <source>Intake… (cards of {node} new in the last 24 h)</source>
        <translation>验收…（{node} 上 24 小时内新上架的卡）</translation>
    </message>
    <message>
        <source>Check the node&apos;s cards first seen in the last 24 h against their spec and fleet</source>
        <translation>对照规格和同型号卡检查该节点 24 小时内首次出现的卡</translation>
    </message>
</context>
<context>
    <name>MainWindow</name>
    <message>
        <source>&amp;File</source>
        <translation>文件(&amp;F)</translation>
    </message>
    <message>
        <source>&amp;View</source>
        <translation>视图(&amp;V)</translation>
    </message>
    <message>
        <source>Fleet</source>
        <translation>集群</translation>
    </message>
    <message>
        <source>Findings</source>
        <translation>告警</translation>
    </message>
    <message>
        <source>Versions</source>
        <translation>版本</translation>
    </message>
    <message>
        <source>Filter: node, gpu[01-16] hostlist, model:A100, vendor:amd, driver:535, status:critical…</source>
        <translation>筛选：节点、gpu[01-16] 主机列表、model:A100、vendor:amd、driver:535、status:critical…</translation>
    </message>
    <message>
        <source>All GPUs</source>
        <translation>全部 GPU</translation>
    </message>
    <message>
        <source>Derating</source>
        <translation>降额</translation>
    </message>
    <message>
        <source>Inspection</source>
        <translation>巡检</translation>
    </message>
    <message>
        <source>Pre-run</source>
        <translation>作业前检查</translation>
    </message>
    <message>
        <source>reading database…</source>
        <translation>正在读取数据库…</translation>
    </message>
    <message>
        <source>&amp;Quit</source>
        <translation>退出(&amp;Q)</translation>
    </message>
    <message>
        <source>&amp;Refresh</source>
        <translation>刷新(&amp;R)</translation>
    </message>
    <message>
        <source>&amp;Find…</source>
        <translation>查找(&amp;F)…</translation>
    </message>
    <message>
        <source>&amp;Collector</source>
        <translation>采集(&amp;C)</translation>
    </message>
    <message>
        <source>&amp;Poll now</source>
        <translation>立即采集(&amp;P)</translation>
    </message>
    <message>
        <source>Pa&amp;use collecting</source>
        <translation>暂停采集(&amp;U)</translation>
    </message>
    <message>
        <source>this window does not collect (no --fleet, or another collector writes)</source>
        <translation>本窗口不采集（未指定 --fleet，或另有采集进程在写入）</translation>
    </message>
    <message>
        <source>&amp;Language</source>
        <translation>语言(&amp;L)</translation>
    </message>
    <message>
        <source>language: {name}</source>
        <translation>语言：{name}</translation>
    </message>
    <message>
        <source>language: {name}, from the next start of fleetmon</source>
        <translation>语言：{name}，下次启动 fleetmon 时生效</translation>
    </message>
    <message>
        <source>poll requested</source>
        <translation>已请求采集</translation>
    </message>
    <message>
        <source>collector: none</source>
        <translation>采集：无</translation>
    </message>
    <message>
        <source>collector: PAUSED</source>
        <translation>采集：已暂停</translation>
    </message>
    <message>
        <source>, {count} {verdict}</source>
        <translation>，{count} {verdict}</translation>
    </message>
    <message>
        <source>{state} · last poll {age} · nodes: {fail} fail, {unreachable} unreachable{silent} · {critical}</source>
        <translation>{state} · 上次采集 {age} 前 · 节点：{fail} 故障，{unreachable} 不可达{silent} · {critical}</translation>
    </message>
    <message>
        <source>1 critical finding</source>
        <translation>1 条严重告警</translation>
    </message>
    <message>
        <source>{count} critical findings</source>
        <translation>{count} 条严重告警</translation>
    </message>
    <message>
        <source>, </source>
        <translation>，</translation>
    </message>
    <message>
        <source>{count} {verdict}</source>
        <translation>{count} {verdict}</translation>
    </message>
    <message>
        <source>{gpus} on {nodes} ({silent}) · newest sample {age}</source>
        <translation>{nodes}上共 {gpus}（{silent}）· 最新数据 {age} 前</translation>
    </message>
    <message>
        <source>1 GPU</source>
        <translation>1 张 GPU</translation>
    </message>
    <message>
        <source>{count} GPUs</source>
        <translation>{count} 张 GPU</translation>
    </message>
    <message>
        <source>1 node</source>
        <translation>1 个节点</translation>
    </message>
    <message>
        <source>{count} nodes</source>
        <translation>{count} 个节点</translation>
    </message>
    <message>
        <source>Findings ({count}, {critical} crit)</source>
        <translation>告警（{count}，{critical} 严重）</translation>
    </message>
    <message>
        <source>GPU {uuid} is not in the fleet any more</source>
        <translation>GPU {uuid} 已不在集群中</translation>
    </message>
    <message>
        <source>intake of {target} running…</source>
        <translation>正在验收 {target}…</translation>
    </message>
    <message>
        <source>intake of {node}: </source>
        <translation>{node} 验收：</translation>
    </message>
    <message>
        <source>cannot read the database: {message}</source>
        <translation>无法读取数据库：{message}</translation>
    </message>
</context>
<context>
    <name>ResolveDialog</name>
    <message>
        <source>Resolve finding</source>
        <translation>处理完成</translation>
    </message>
    <message>
        <source>what was done (RMA number, part, ticket…)</source>
        <translation>做了什么（RMA 编号、部件、工单…）</translation>
    </message>
    <message>
        <source>Resolved because:</source>
        <translation>处理方式：</translation>
    </message>
    <message>
        <source>Note:</source>
        <translation>备注：</translation>
    </message>
    <message>
        <source>Closes this episode and keeps it in the card&apos;s history; if the fault comes back it reopens as a recurrence.</source>
        <translation>关闭本次告警并保留在该卡的历史中；故障再次出现时作为复发重新打开。</translation>
    </message>
</context>
<context>
    <name>Severity</name>
    <message>
        <source>critical</source>
        <translation>严重</translation>
    </message>
    <message>
        <source>warning</source>
        <translation>警告</translation>
    </message>
    <message>
        <source>info</source>
        <translation>提示</translation>
    </message>
</context>
<context>
    <name>Verdict</name>
    <message>
        <source>pass</source>
        <translation>正常</translation>
    </message>
    <message>
        <source>warn</source>
        <translation>警告</translation>
    </message>
    <message>
        <source>fail</source>
        <translation>故障</translation>
    </message>
    <message>
        <source>unreachable</source>
        <translation>不可达</translation>
    </message>
    <message>
        <source>stale</source>
        <translation>数据过期</translation>
    </message>
    <message>
        <source>unknown</source>
        <translation>未知</translation>
    </message>
</context>
<context>
    <name>app</name>
    <message>
        <source>fleetmon: no such database</source>
        <translation>fleetmon：数据库不存在</translation>
    </message>
    <message>
        <source>There is no database at
{path}

Create an empty fleetmon database there?</source>
        <translation>以下位置没有数据库：
{path}

在此创建一个空的 fleetmon 数据库吗？</translation>
    </message>
</context>
</TS>
