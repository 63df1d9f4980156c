Feature: The privacy rules hold on data nobody wrote for them
  Memories are sentences. A key, a password or a person's data must be refused
  where it stands, with or without a word like "key" next to it, while the
  random-looking things notes are full of (commit ids, digests, ciphertext,
  published examples) pass. Findings name the rule and the line, never the value.

  Background:
    Given an initialised project

  Scenario Outline: A safe memory holding <what> is refused by name, not by value
    Given I remember the state of both roots
    When I add a safe memory "project_note" whose body says "<text>"
    Then the exit code is 1
    And the error names the rule "<rule>"
    And the error does not show "<value>"
    And both roots are as remembered

    Examples:
      | what                              | text                                                          | rule                 | value                                 |
      | a Databricks token, no keyword    | the deploy uses dapi9f3c1b7e2a5d4c8f0b6e1a3d9c7f2b4e for it    | databricks-token     | dapi9f3c1b7e2a5d4c8f0b6e1a3d9c7f2b4e  |
      | a random token, no keyword        | staging runs with Xk9fQ2mZ7pL4vR8sT1wN6yB3cD5gH0jK now          | random-token         | Xk9fQ2mZ7pL4vR8sT1wN6yB3cD5gH0jK      |
      | a curl user and password          | ran curl -u deploy:Harbor1280Wq https://ci.acme-corp.io/jobs  | cli-user-password    | Harbor1280Wq                          |
      | a password in French prose        | le mot de passe est Tr0ub4dor-Cheval                           | prose-password       | Tr0ub4dor-Cheval                      |
      | a Brazilian CPF                   | Ana gave 529.982.247-25 at the desk                            | br-cpf               | 529.982.247-25                        |
      | a Dutch mobile number             | reach Sven at 06-12345678 after six                            | phone-number-national | 06-12345678                          |
      | a German postal address           | she moved to Lindenstraße 12, 10969 Berlin in May              | postal-address-compound | Lindenstraße 12                    |
      | a date of birth after a name      | from the HR sheet: Giulia Rossi (14/03/1987)                   | date-of-birth-named  | 14/03/1987                            |
      | a home path with an accented name | logs end up in /home/josé/projects/api                         | home-path-linux      | josé                                  |
      | a word password in an ODBC string | the ledger DSN is DSN=ledger;UID=report;PWD=marmalade          | connection-string-password | marmalade                       |
      | a password in a Maven element     | the CI server entry holds <password>Tq7#vLm29xKa</password>    | markup-secret-element | Tq7#vLm29xKa                         |
      | a password in a pod's env list    | the pod has - name: SMTP_PASSWORD value: Hn4$wQ82pLxz           | secret-name-value-pair | Hn4$wQ82pLxz                        |
      | an impacket target password       | ran psexec.py ACME/svc_backup:Vr8!kP2qLm@10.20.0.15 to check    | impacket-target-password | Vr8!kP2qLm                        |
      | a key named only Key in a log     | the job log says Using Key=rQ7vT2xL9kMw3NpZ8cYb5H then fails  | keyed-label-token    | rQ7vT2xL9kMw3NpZ8cYb5H                |
      | a login pair in prose             | the staging creds are deploy/Vq7#Lm29xKaT until Friday         | prose-credential-pair | Vq7#Lm29xKaT                         |
      | a literal compared first in code  | the check reads if ('Tr0ub4dor3xQ9' == password) { grant }     | secret-comparison-reversed | Tr0ub4dor3xQ9                   |
      | a PHP define of a password        | wp-config still has define('DB_PASSWORD', 'Hn4$wQ82pLxzR');     | secret-named-argument | Hn4$wQ82pLxzR                        |
      | a WordPress salt in its define    | wp-config has define('AUTH_SALT', 'j@cGIZJfOqpPU);AZgYH5,ubbSlUp~ZnLZNlq#;tkFe5xc(=_0[LKbF71T.EE ~9'); | secret-named-argument | j@cGIZJfOqpPU);AZgYH5,ubbSlUp |
      | a vendor's base36 key by its name | the weather api key: ik0oco5xwzhagmknehebjch5189hncok for the widget | keyed-label-token | ik0oco5xwzhagmknehebjch5189hncok |
      | a salt with angle brackets inside | wp-config has define('NONCE_SALT', ':9URM*n56<q+!qK>+Lq&j9^-!{%%pW. ,Z=I1Rf$ud0cFJ'); | secret-named-argument | :9URM*n56<q+!qK>+Lq&j9 |
      | a password straight after the word | use the password Winter2024! for the admin console           | prose-password-bare  | Winter2024!                          |
      | a password with brackets out of order | the old config had db_pass = q{{h}o)p${e]nob(ody[zk>-_$#  | secret-assignment    | e]nob(ody                            |
      | a key in a URL query by its name   | the feed is wss://stream.acme.io/feed?authToken=q8Zt3vLx9PmR2wKd7sYbN4cF | url-query-secret | q8Zt3vLx9PmR2wKd7sYbN4cF   |
      | a password under an entry's key    | the properties file has <entry key="db.password">Wq7vR2nLp9x</entry> | markup-secret-attribute | Wq7vR2nLp9x              |
      | an Oracle user/password@db        | the export runs sqlplus report/Wq7vR2nLp9x@LEDGER nightly     | oracle-user-password | Wq7vR2nLp9x                           |
      | a password handed to an auth call  | the client calls auth=("deploy", "Wq7vR2nLp9x") on each request | credential-pair-call | Wq7vR2nLp9x                        |
      | a Redis requirepass line           | cache01 has `requirepass Wq7vR2nLp9x` in redis.conf           | config-directive-password | Wq7vR2nLp9x                      |
      | a short API key in Spanish         | la clave API de staging es Hk3mQ9pLx7vT2bN8                    | generic-high-entropy-secret | Hk3mQ9pLx7vT2bN8               |
      | a passphrase given to ssh-keygen   | made the key with ssh-keygen -t ed25519 -N Wq7vR2nLp9x -f ci  | tool-password-argument | Wq7vR2nLp9x                         |
      | a default under a password setting | application.yml has password: ${DB_PASSWORD:Wq7vR2nLp9x} now   | substitution-default-secret | Wq7vR2nLp9x                    |
      | a password in a Markdown table     | the lab sheet row is \| DB password \| Wq7vR2nLp9x \| for now   | table-secret-cell    | Wq7vR2nLp9x                           |
      | a Dockerfile ENV in two words      | the image sets `ENV DB_PASSWORD Wq7vR2nLp9x` at build time    | env-command-secret   | Wq7vR2nLp9x                           |
      | a token set by a typed declaration | main.go has var deployToken string = "q8Zt3vLx9PmR2wKd7sYb" | secret-assignment-quoted | q8Zt3vLx9PmR2wKd7sYb |
      | a token after a service's name     | the loggly: 7c1e4b2a-93d0-4f5e-8a61-2b7c9d0e3f48 one is prod  | vendor-named-token   | 7c1e4b2a-93d0-4f5e-8a61-2b7c9d0e3f48  |
      | a smaller service's prefixed token | PGANALYZE_READ_KEY=pgar_Kq3mT8vZ2xLr9pW4sN7cB1dF6hJ for the agent | service-prefixed-token | pgar_Kq3mT8vZ2xLr9pW4sN7cB1dF6hJ |
      | an Irish PPS number by its label  | her PPS number is 4337741JW for the payroll form               | national-id-labelled | 4337741JW                            |
      | a Korean foreign resident's number | 외국인등록번호 991106-5872102 on the lease                      | kr-rrn               | 991106-5872102                        |
      | an Azure DevOps legacy token      | the pipeline clones with bsvsht2ubvmdhkhhciwtb3iw2yyp2oilbzqjobbr62quiflcqvud today | random-token | bsvsht2ubvmdhkhhciwtb3iw2yyp2oilbzqjobbr62quiflcqvud |
      | a key's body with no markers      | the signer reads SIGNING=MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg8/udqwirstGlgWc6 at boot | private-key-der | BG0wawIBAQQg8/udqwirstGlgWc6 |
      | a key named by a token word       | the stack sets TokenKey: b@d0@u7H70K3n for the cache          | secret-assignment    | b@d0@u7H70K3n                         |
      | a 30-digit hex secret by its label | the Plaid secret - 6e611cb89c263457b5e028d66c16c4 is for sandbox | keyed-label-token | 6e611cb89c263457b5e028d66c16c4 |

  Scenario Outline: A safe memory holding <what> is accepted
    When I add a safe memory "project_note" whose body says "<text>"
    Then the exit code is 0
    And the mirror copy of "project_note.md" is byte-identical to the private copy

    Examples:
      | what                          | text                                                                                      |
      | a commit id                   | bisected to 3f9c2a1b8d4e5f60718293a4b5c6d7e8f9012345                                       |
      | a word ending in a pin        | linchpin: Redis cluster holds the sessions                                                |
      | an NHS number with a typo     | NHS number 611 604 0439 was rejected by the form                                           |
      | words joined by base32 digits | the service is backend2frontend3service4cluster5database6storage7                          |
      | a word ending in a pass       | the compass is N45E12W on the old survey                                                  |
      | a request UUID                | the request id was 0d1f6c52-8a43-4b7e-9c1d-2e5f8a9b3c47                                   |
      | a lockfile integrity hash     | pinned with sha512-3/nbrEb6pkbj6cl9V7VW/FSeKLD/cXoXCHBfCDxmNH02c0HAw+RKrvNSo4DsVZkl/HJhtIe5TTdq8rpsjGaHQw== |
      | a SOPS-encrypted value        | db_password: ENC[AES256_GCM,data:Mk1QMnOb58WVgAU=,iv:gjDkyaH+RDYVkVQImXCaxm09gcr4rLmqTDEB3Tq6yr4=,tag:jJgOxTvHermIj51srRhh5g==,type:str] |
      | the jwt.io sample token       | decode eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c to see the claims |
      | a published test card         | Stripe test card 4242 4242 4242 4242 works in sandbox                                     |
      | the ISO sample IBAN           | the docs use GB82 WEST 1234 5698 7654 32 as the example                                   |
      | a fictional phone number      | call +1 555-0100 in the demo script                                                       |
      | a camelCase identifier        | run `Lwjgl3GameLauncher.main` for the client                                              |
      | a public key setting          | primaryKey: 7f3a9c2e4b1d8f6a0c5e3b7d9a1f4c8e                                              |
      | a version after a product     | built on MonoGame 3.8.4.1 and .NET 8                                                      |
      | a Rails form's CSRF token     | the form renders name="authenticity_token" value="7SWa-Fo1_hsC6oovfBsJFLGPUl2EhkSWPbJhWANwgaJWBDl1vxd9VNqXTNAefsJqzIRYaZEfYZLffa31rw8zJA" |
      | a password read from a secret | env: - name: DB_PASSWORD valueFrom: secretKeyRef: name: db key: password                  |
      | two names after a login word  | login with GitHub / GitLab for the mirror                                                 |
      | words under a key name        | cache_key = build-output-linux-x64                                                        |
      | a placeholder in angle brackets | define('AUTH_KEY', '<your-unique-phrase>'); and api_key = <your-api-key> in the docs   |
      | words joined by digits by a key | the cache key is python3slim12bookworm2025 for the runner                                  |
      | a setting named by a word in pass | the proxy config says bypass = cache-only-mode and encompass = all-services-eu2         |
      | an identifier after password  | password Argon2id hashing is used for PasswordPolicy2                                     |
      | a substitution with a default | the compose file sets password = ${DB_PASSWORD:-changeme} for local runs                  |
      | a Maven-encrypted password    | settings.xml keeps <password>{COQLCE6DU6GtcS5P=}</password> for the mirror                 |
      | a password manager's name     | the deploy key lives in 1Password: Infra/Deploy-Prod                                      |
      | prose after identified by     | the user was identified by their email at the desk                                         |
      | a pagination token in a URL   | the next page is https://api.acme.io/v2/items?pageToken=q8Zt3vLx9PmR2wKd7sYbN4cF          |
      | a service named with no token | ngrok exposes it at https://4f2a-81-2-3-4.ngrok-free.app; bugsnag stage is production-eu-west-1 |
      | a condition on a password     | the template says HasPassword: !Not [!Equals [!Ref DBPassword, '']] for the cluster       |
      | a secrets-manager reference   | the stack reads AuthToken: '{{resolve:secretsmanager:/cache/authtoken:SecretString:password}}' |
      | code reading a password field | the hook compares AllowUsersToChangePassword: event.ResourceProperties.AllowUsersToChangePassword |

  Scenario: The pre-commit hook refuses a hand-edited mirror file by the same rules
    Given someone wrote the mirror file "project_deploy" by hand, saying "the deploy uses dapi9f3c1b7e2a5d4c8f0b6e1a3d9c7f2b4e for it"
    When I run "mirror check"
    Then the exit code is 7
    And the output mentions "databricks-token"
    And the output mentions "project_deploy.md"
    And the output does not show "dapi9f3c1b7e2a5d4c8f0b6e1a3d9c7f2b4e"

  Scenario: A mirror file whose quoted description starts with a blank is checked like any other
    The reading that joins words cut at line ends takes a quoted value's inside as the value; blanks
    inside the quotes belong to no word, and once stopped the whole check with an internal error.

    Given someone wrote the mirror file "project_deploy" by hand with the frontmatter "name: deploy r2026; description: ' 77 notes'", saying:
      """
      the deploy uses dapi9f3c1b7e2a5d4c8f0b6e1a3d9c7f2b4e for it
      build r2026
      next step
      """
    When I run "mirror check"
    Then the exit code is 7
    And the output mentions "databricks-token"
    And the output mentions "project_deploy.md"
    And the output does not show "internal error"
    And the output does not show "dapi9f3c1b7e2a5d4c8f0b6e1a3d9c7f2b4e"

  Scenario: Masking tokens for the prompt loads no personal-data library
    Given the private memory "user_deploy" whose body says "the deploy uses dapi9f3c1b7e2a5d4c8f0b6e1a3d9c7f2b4e for it"
    When inject runs as its own process
    Then the exit code is 0
    And the output mentions "[redacted: databricks-token]"
    And the output does not show "dapi9f3c1b7e2a5d4c8f0b6e1a3d9c7f2b4e"
    And that process imported neither phonenumbers nor stdnum

  Scenario: A password holding a quote reaches the prompt masked whole
    One rule may name the finding and stop at the quote while another reads the literal to its end:
    the mask covers both.
    Given the private memory "user_db" whose body says "the app reads DB_PASSWORD="Wq7v'R2nLp9x#k3" from its env file"
    When I run "inject --query DB_PASSWORD"
    Then the exit code is 0
    And the output mentions "[redacted: "
    And the output does not show "R2nLp9x"
    And the output does not show "Wq7v"

  Scenario Outline: A rule that reads only texts able to hold its match still refuses <what>
    A rule runs only on a text holding what every match of it must contain (its digits, its
    separators, the letters its Unicode classes allow), and one whose Unicode classes are costly
    is compiled only once a widened copy of it matches. Skipping is never a verdict.
    Given I remember the state of both roots
    When I add a safe memory "project_note" whose body says "<text>"
    Then the exit code is 1
    And the error names the rule "<rule>"
    And the error does not show "<value>"
    And both roots are as remembered

    Examples:
      | what                             | text                                                    | rule                    | value               |
      | a card number in groups          | the card on file is 4539 1488 0343 6467 for refunds      | payment-card-number     | 4539 1488 0343 6467 |
      | a birth date after a Unicode name | Zoë Ångström-Berg, 14.03.1986 joins the on-call rota     | date-of-birth-named     | 14.03.1986          |
      | a street address with ß          | deliveries go to Lindenstraße 12, 10115 Berlin from now  | postal-address-compound | Lindenstraße 12     |

  Scenario: A rules cache written for another copy of the rules file is replaced, not parsed around forever
    Given the home's privacy rules cache was written for another copy of the rules file
    When a consolidation runs as its own process
    Then that process exited 0
    And the home's privacy rules cache holds the shipped rules under the shipped file's identity
